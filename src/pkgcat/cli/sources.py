"""``pkgcat source``: repository owners."""

from __future__ import annotations

from typing import Annotated

import typer

from pkgcat.cli import group
from pkgcat.cli._common import admin, print_listing, stdout
from pkgcat.cli._tables import Column, when
from pkgcat.storage.admin import Dependants

app = group("source")

CASCADE_HELP = "Delete everything that depends on it too, in the same transaction."


@app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="Name of the source, as details shows it.")],
    url: Annotated[str, typer.Option("--url", help="Address of the source.")],
    origin: Annotated[str, typer.Option("--origin", help="Origin of its repository.")] = "",
) -> None:
    """Add a source."""
    with admin() as handle:
        source = handle.add_source(name, url=url, origin=origin)
    stdout.print(
        f"source {source.name!r} added (id {source.id})",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


@app.command("list")
def list_sources(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List the sources with how many packages, applications and purchases each has."""
    with admin() as handle:
        found = handle.list_sources()
    records = [
        {
            "id": s.id,
            "name": s.name,
            "label": s.label,
            "url": s.url,
            "origin": s.origin,
            "packages": s.packages,
            "applications": s.applications,
            "purchases": s.purchases,
            "created_at": when(s.created_at),
        }
        for s in found
    ]
    print_listing(
        [
            Column("id", kind="number"),
            Column("name", kind="identifier"),
            Column("label"),
            Column("url"),
            Column("origin"),
            Column("packages", kind="number"),
            Column("applications", "apps", kind="number"),
            Column("purchases", kind="number"),
            Column("created_at", "created (UTC)", "time"),
        ],
        records,
        as_json,
    )


def say_deleted(what: str, gone: Dependants) -> None:
    """One line: what was deleted, and what went with it."""
    tail = f", with {gone.describe()}" if gone else ""
    stdout.print(f"deleted {what}{tail}", markup=False, highlight=False, soft_wrap=True)


@app.command("delete")
def delete(
    name: Annotated[str, typer.Argument(help="Name of the source.")],
    cascade: Annotated[bool, typer.Option("--cascade", help=CASCADE_HELP)] = False,
) -> None:
    """Delete a source; refused while it has packages, applications or purchases."""
    with admin() as handle:
        gone = handle.delete_source(name, cascade=cascade)
    say_deleted(f"source {name!r}", gone)
