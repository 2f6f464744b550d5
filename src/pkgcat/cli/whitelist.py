"""``pkgcat whitelist``: the devices a package's seller allows it, whatever they bought.

The operator's side of what sellers do through the API (YouRepo's whitelist): the same rules
(:mod:`pkgcat.licences`) and the same writes (:mod:`pkgcat.storage.writes.whitelist`), on
any source's package.
"""

from __future__ import annotations

import time
from typing import Annotated

import typer
from sqlalchemy import Engine

from pkgcat.cli import group
from pkgcat.cli._common import fail, load_settings, opened, print_listing, stdout
from pkgcat.cli._tables import Column, when
from pkgcat.errors import InvalidArgument
from pkgcat.licences import checked_entries, checked_udids
from pkgcat.storage.writes import whitelist
from pkgcat.storage.writes.whitelist import GonePackage, WhitelistChange

app = group("whitelist")

PACKAGE = Annotated[str, typer.Argument(help="The package's identifier.")]
UDIDS = Annotated[list[str], typer.Argument(help="Device ids (UDIDs), one or more.")]


def _row(engine: Engine, package: str) -> int:
    found = whitelist.package_row(engine, package)
    if found is None:
        fail(f"no package {package!r} in this catalogue")
    return found


def _say(package: str, change: WhitelistChange) -> None:
    parts = [
        f"{n} {what}"
        for n, what in (
            (change.added, "added"),
            (change.updated, "with a new description"),
            (change.removed, "removed"),
            (change.unchanged, "unchanged"),
        )
        if n
    ]
    stdout.print(f"{package}: {', '.join(parts)}", markup=False, highlight=False, soft_wrap=True)


@app.command("add")
def add(
    package: PACKAGE,
    udids: UDIDS,
    description: Annotated[
        str, typer.Option("--description", help="What the devices are (shown by list).")
    ] = "",
) -> None:
    """Allow devices a package: each then owns it for checks, the store and Cydia's gate.

    A device already there keeps its place; given another description, it takes the new one.
    """
    try:
        entries = checked_entries([(udid, description) for udid in udids])
    except InvalidArgument as error:
        fail(error.message, 2)
    with opened(load_settings()) as engine:
        try:
            change = whitelist.add(engine, _row(engine, package), entries, int(time.time()))
        except GonePackage:
            fail(f"no package {package!r} in this catalogue")
    _say(package, change)


@app.command("remove")
def remove(package: PACKAGE, udids: UDIDS) -> None:
    """Take devices off a package's whitelist (one not there is left as it is)."""
    try:
        wanted = checked_udids(udids)
    except InvalidArgument as error:
        fail(error.message, 2)
    with opened(load_settings()) as engine:
        try:
            change = whitelist.remove(engine, _row(engine, package), wanted)
        except GonePackage:
            fail(f"no package {package!r} in this catalogue")
    _say(package, change)


@app.command("list")
def list_command(
    package: PACKAGE,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List the devices on a package's whitelist, by udid."""
    with opened(load_settings()) as engine:
        found = whitelist.listed(engine, _row(engine, package))
    records = [
        {"udid": udid, "description": text, "added_at": when(added)} for udid, text, added in found
    ]
    print_listing(
        [
            Column("udid", kind="identifier"),
            Column("description"),
            Column("added_at", "added (UTC)", "time"),
        ],
        records,
        as_json,
    )
