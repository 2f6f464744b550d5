"""``pkgcat buyer``: the store's buyer accounts, and revoking their devices' sign-ins."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from pkgcat.cli import group
from pkgcat.cli._common import fail, load_settings, migrated, print_listing, stdout
from pkgcat.cli._tables import Column, when
from pkgcat.storage.engine import engine_for
from pkgcat.storage.store import list_buyers, revoke_buyer

app = group("buyer")


@app.command("list")
def list_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List the store's buyers by email, with how many devices are signed in now."""
    settings = migrated(load_settings())
    engine = engine_for(settings.database_url)
    try:
        buyers = list_buyers(engine)
    finally:
        engine.dispose()
    records = [
        {"email": b.email, "devices": b.devices, "created_at": when(b.created_at)} for b in buyers
    ]
    print_listing(
        [Column("email", kind="identifier"), Column("devices"), Column("created_at", kind="time")],
        records,
        as_json,
    )


@app.command("revoke")
def revoke(
    email: Annotated[str, typer.Argument(help="The buyer's email address.")],
) -> None:
    """Sign a buyer out of every device: each token is refused from now on (invalidate: true)."""
    settings = migrated(load_settings())
    engine = engine_for(settings.database_url)
    try:
        revoked = revoke_buyer(engine, email.strip().lower(), int(time.time()))
    finally:
        engine.dispose()
    if revoked is None:
        fail(f"no buyer with the email address {email!r}")
    stdout.print(
        f"{revoked} sign-in(s) of {email.strip().lower()} revoked; their devices must sign in again",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
