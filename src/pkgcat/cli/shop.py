"""``pkgcat shop``: what an operator, or a seller moving hosts, does to a source's shop from
the command line: import its customers (each gifted the package they owned elsewhere), and
read a package's history."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import anyio
import orjson
import typer

from pkgcat.cli import group
from pkgcat.cli._common import fail, load_settings, opened, print_listing
from pkgcat.cli._tables import Column, when
from pkgcat.shop import gifting
from pkgcat.shop.errors import ShopRefused
from pkgcat.shop.values import Gift, operator
from pkgcat.storage.shop.log import history
from pkgcat.storage.writes.published import source_address
from pkgcat.store.mail import mailer_for

app = group("shop")
CSV_MAX_BYTES = 4 * 1024 * 1024


@app.command("import-customers")
def import_customers(
    file: Annotated[Path, typer.Argument(help="CSV with the header email,package.")],
    source: Annotated[str, typer.Option("--source", help="The source whose packages they own.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """Gift each row's package to its email address: owned at once by a buyer the store knows,
    else a code mailed. All rows or none: a wrong row is named and nothing is written."""
    settings = load_settings()
    if settings.smtp_host is None and settings.mail_backend != "console":
        fail("mailing gift codes needs PKGCAT_SMTP_HOST and PKGCAT_SMTP_FROM", 2)
    if file.stat().st_size > CSV_MAX_BYTES:
        fail(f"{file}: larger than {CSV_MAX_BYTES} bytes", 2)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        fail(f"{file}: not UTF-8 text", 2)
    with opened(settings) as engine:
        found = source_address(engine, source)
        if found is None:
            fail(f"no source named {source!r}", 2)
        source_id = found[0]

        async def imported() -> list[Gift]:
            return await gifting.import_customers(
                engine,
                mailer_for(settings),
                source_id,
                text,
                expires_at=None,
                default_days=settings.shop_gift_days,
                actor=operator("shop import-customers"),
                now=int(time.time()),
            )

        try:
            gifts = anyio.run(imported)
        except ShopRefused as refused:
            fail(f"{file.name}: {refused}", 2)
    records = [{"email": g.email, "package": g.package, "delivered": g.delivered} for g in gifts]
    print_listing(
        [Column("email", kind="identifier"), Column("package", kind="identifier"),
         Column("delivered")],
        records,
        as_json,
    )  # fmt: skip


@app.command("history")
def history_command(
    source: Annotated[str, typer.Option("--source", help="The package's source.")],
    package: Annotated[str, typer.Option("--package", help="The package.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """A package's history, newest first: who set what, when."""
    with opened(load_settings()) as engine:
        found = source_address(engine, source)
        if found is None:
            fail(f"no source named {source!r}", 2)
        try:
            entries = history(engine, found[0], package)
        except ShopRefused as refused:
            fail(str(refused), 2)
    records = [
        {
            "at": when(e.at),
            "by": e.actor,
            "change": e.change,
            "facts": orjson.dumps(e.facts).decode(),
        }
        for e in entries
    ]
    print_listing(
        [Column("at", kind="time"), Column("by"), Column("change"), Column("facts")],
        records,
        as_json,
    )
