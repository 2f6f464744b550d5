"""``pkgcat app``: applications, the callers of the API."""

from __future__ import annotations

from typing import Annotated

import typer

from pkgcat.cli import group
from pkgcat.cli._common import admin, fail, load_settings, print_json, print_listing, stdout
from pkgcat.cli._tables import Column, when
from pkgcat.cli.sources import CASCADE_HELP, say_deleted
from pkgcat.config import check_timezone
from pkgcat.domain import Shape
from pkgcat.storage.admin import IssuedKey

app = group("app")


def show_key(issued: IssuedKey, as_json: bool) -> None:
    """Print a new key once: it is never shown again."""
    settings = load_settings()
    app_ = issued.application
    public = issued.kind == "public"
    record: dict[str, object] = {
        "name": app_.name,
        "source": issued.source.name,
        "shape": app_.shape or settings.shape,
        "timezone": app_.timezone or settings.timezone,
    }
    if public:
        record |= {"public_key": issued.secret_key, "kind": "public", "package": issued.package}
    else:
        record |= {"secret_key": issued.secret_key, "scopes": issued.scopes.split()}
    if as_json:
        print_json(record)
        return
    stdout.print(
        f"application {app_.name!r} of {issued.source.name!r} "
        f"(shape {record['shape']}, time zone {record['timezone']})",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if public:
        answers = "every package of the source" if issued.package is None else issued.package
        stdout.print(
            f"checks licences only, for {answers}", markup=False, highlight=False, soft_wrap=True
        )
        stdout.print(f"public key (shown once): [bold]{issued.secret_key}[/]", soft_wrap=True)
        return
    stdout.print(f"scopes: {issued.scopes}", markup=False, highlight=False, soft_wrap=True)
    stdout.print(
        f"secret key (shown once, store it now): [bold]{issued.secret_key}[/]", soft_wrap=True
    )


@app.command("create")
def create(
    source: Annotated[str, typer.Option("--source", help="Source the application belongs to.")],
    name: Annotated[str, typer.Option("--name", help="Name of the application.")],
    shape: Annotated[
        str | None, typer.Option("--shape", help="A or B; default: PKGCAT_SHAPE.")
    ] = None,
    timezone: Annotated[
        str | None, typer.Option("--timezone", help="IANA zone; default: PKGCAT_TIMEZONE.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Create an application and print its first secret key, once."""
    chosen: Shape | None = None
    if shape is not None:
        if shape.upper() not in ("A", "B"):
            fail(f"--shape: {shape!r} is not a shape; use A or B", 2)
        chosen = "A" if shape.upper() == "A" else "B"
    if timezone is not None:
        try:
            check_timezone(timezone)
        except ValueError as error:
            fail(f"--timezone: {error}", 2)
    with admin() as handle:
        issued = handle.create_application(source, name, shape=chosen, timezone=timezone)
    show_key(issued, as_json)


@app.command("list")
def list_applications(
    source: Annotated[
        str | None, typer.Option("--source", help="Only the applications of this source.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List the applications with their effective shape and time zone and their keys."""
    with admin() as handle:
        found = handle.list_applications(source)
    settings = load_settings()
    records = [
        {
            "id": a.id,
            "source": a.source,
            "name": a.name,
            "shape": a.shape or settings.shape,
            "timezone": a.timezone or settings.timezone,
            "live_keys": a.live_keys,
            "keys": a.keys,
            "created_at": when(a.created_at),
        }
        for a in found
    ]
    print_listing(
        [
            Column("id", kind="number"),
            Column("source", kind="identifier"),
            Column("name", kind="identifier"),
            Column("shape"),
            Column("timezone", "time zone", "identifier"),
            Column("live_keys", "live keys", kind="number"),
            Column("keys", kind="number"),
            Column("created_at", "created (UTC)", "time"),
        ],
        records,
        as_json,
    )


@app.command("delete")
def delete(
    source: Annotated[str, typer.Option("--source", help="Source of the application.")],
    application: Annotated[str, typer.Option("--app", help="Name of the application.")],
    cascade: Annotated[bool, typer.Option("--cascade", help=CASCADE_HELP)] = False,
) -> None:
    """Delete an application; refused while it has keys or usage history."""
    with admin() as handle:
        gone = handle.delete_application(source, application, cascade=cascade)
    say_deleted(f"application {application!r} of {source!r}", gone)
