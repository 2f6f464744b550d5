"""``pkgcat key``: secret keys (stored as hashes; a key is shown once)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from pkgcat.cli._common import admin, print_json, stdout
from pkgcat.cli.apps import show_key

app = typer.Typer(help="Secret keys.", no_args_is_help=True)


def _when(seconds: int | None) -> str:
    return "" if seconds is None else datetime.fromtimestamp(seconds, UTC).isoformat()


@app.command("create")
def create(
    source: Annotated[str, typer.Option("--source", help="Source of the application.")],
    application: Annotated[str, typer.Option("--app", help="Name of the application.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Add a key to an application (for rotation) and print it, once."""
    with admin() as handle:
        issued = handle.create_key(source, application)
    show_key(issued, as_json)


@app.command("list")
def list_keys(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List keys by their display prefix (the keys themselves are not stored)."""
    with admin() as handle:
        rows = handle.list_keys()
    if as_json:
        print_json(
            [
                {
                    "prefix": r.prefix,
                    "source": r.source,
                    "application": r.application,
                    "created_at": _when(r.created_at),
                    "last_used_at": _when(r.last_used_at) or None,
                    "revoked_at": _when(r.revoked_at) or None,
                }
                for r in rows
            ]
        )
        return
    table = Table("prefix", "source", "application", "created", "last used", "revoked")
    for r in rows:
        table.add_row(
            r.prefix,
            escape(r.source),
            escape(r.application),
            _when(r.created_at),
            _when(r.last_used_at),
            _when(r.revoked_at),
        )
    stdout.print(table)


@app.command("revoke")
def revoke(
    prefix: Annotated[str, typer.Argument(help="The key's display prefix, e.g. pkc_AbCd1234.")],
) -> None:
    """Revoke a key: requests with it get code 5 from then on."""
    with admin() as handle:
        info = handle.revoke_key(prefix)
    stdout.print(
        f"revoked {info.prefix} of {info.application!r} ({info.source})",
        markup=False,
        highlight=False,
    )
