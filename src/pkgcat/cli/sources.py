"""``pkgcat source``: repository owners."""

from __future__ import annotations

from typing import Annotated

import typer

from pkgcat.cli._common import admin, stdout

app = typer.Typer(help="Sources (repository owners).", no_args_is_help=True)


@app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="Name of the source, as details shows it.")],
    url: Annotated[str, typer.Option("--url", help="Address of the source.")],
    origin: Annotated[str, typer.Option("--origin", help="Origin of its repository.")] = "",
) -> None:
    """Add a source."""
    with admin() as handle:
        source = handle.add_source(name, url=url, origin=origin)
    stdout.print(f"source {source.name!r} added (id {source.id})", markup=False, highlight=False)
