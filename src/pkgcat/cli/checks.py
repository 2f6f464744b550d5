"""``pkgcat check``: the catalogue checked against rules that data from before may break."""

from __future__ import annotations

from typing import Annotated

import typer

from pkgcat.cli import group
from pkgcat.cli._common import load_settings, opened, print_listing, stdout
from pkgcat.cli._tables import Column
from pkgcat.storage.checks import case_twins

app = group("check")


@app.command("package-ids")
def package_ids(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List package ids that differ only in letter case, with their sources; exit 1 if any."""
    with opened(load_settings()) as engine:
        twins = case_twins(engine)
    if not twins and not as_json:
        stdout.print("no package ids differ only in letter case", markup=False, highlight=False)
        return
    print_listing(
        [
            Column("id", kind="identifier"),
            Column("package", kind="identifier"),
            Column("source"),
            Column("online"),
            Column("files", kind="number"),
            Column("kept"),
        ],
        [
            {
                "id": twin.folded,
                "package": twin.package,
                "source": twin.source,
                "online": twin.online,
                "files": twin.files,
                "kept": twin.kept,
            }
            for twin in twins
        ],
        as_json,
    )
    if twins:
        raise typer.Exit(1)
