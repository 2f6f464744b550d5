"""``pkgcat client whitelist``: the devices a package's whitelist allows, through the API.

Reading needs any secret key of the package's source; ``add`` and ``remove`` a key with the
``whitelist`` scope. Every write sends one ``Idempotency-Key`` with all its attempts
(``--idempotency-key``, else a random one per run), so a retry changes nothing twice; the
writes are idempotent besides (a device already as asked is counted as unchanged).
"""

from __future__ import annotations

from typing import Annotated

import typer

from pkgcat.cli._tables import Column, print_rows
from pkgcat.cli.client_config import Options, Output, client_options
from pkgcat.cli.client_render import canonical, print_json
from pkgcat.client import WhitelistChange

app = typer.Typer(
    help="A package's whitelist: devices allowed it whatever they bought.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

PackageId = Annotated[str, typer.Argument(metavar="ID", help="Package identifier.")]
Udids = Annotated[list[str], typer.Argument(metavar="UDID...", help="Device UDIDs (at most 500).")]
IdempotencyKey = Annotated[
    str | None,
    typer.Option(
        "--idempotency-key",
        help="Sent with every attempt, so that a retry changes nothing twice "
        "(default: a random one per run).",
    ),
]

_options = client_options(without=("output_format", "as_csv"))
"""The shared options, but the output is a table or, with ``--json``, JSON."""

_CHANGE_COLUMNS = ("package", "added", "updated", "unchanged", "removed")


def _show_change(change: WhitelistChange, output: Output) -> None:
    if output == "json":
        print_json(change)
        return
    row = [canonical(getattr(change, name)) for name in _CHANGE_COLUMNS]
    print_rows([Column(name) for name in _CHANGE_COLUMNS], [row])


@app.command("list")
@_options
def list_devices(
    package_id: PackageId,
    limit: Annotated[int, typer.Option("--limit", help="Page size (server max 100).")] = 25,
    page: Annotated[int, typer.Option("--page", help="Page number, from 1.")] = 1,
    *,
    options: Options,
) -> None:
    """One page of the package's whitelist, by udid."""
    with options.client() as client:
        found = client.whitelist(package_id, limit=limit, page=page)
    if options.output == "json":
        print_json(found)
        return
    rows = [[canonical(e.udid), canonical(e.description)] for e in found.whitelist]
    print_rows([Column("udid"), Column("description")], rows)
    shown = f"{found.start + 1:,}-{found.start + len(rows):,}" if rows else "none"
    typer.echo(f"page {found.page}: devices {shown} of {found.total:,}", err=True)


@app.command("add")
@_options
def add(
    package_id: PackageId,
    udid: Udids,
    description: Annotated[
        str | None, typer.Option("--description", help="A note kept with each device.")
    ] = None,
    idempotency_key: IdempotencyKey = None,
    *,
    options: Options,
) -> None:
    """Put devices on the package's whitelist (a key with the whitelist scope)."""
    with options.client() as client:
        change = client.whitelist_add(
            package_id, udid, description=description, idempotency_key=idempotency_key
        )
    _show_change(change, options.output)


@app.command("remove")
@_options
def remove(
    package_id: PackageId,
    udid: Udids,
    idempotency_key: IdempotencyKey = None,
    *,
    options: Options,
) -> None:
    """Take devices off the package's whitelist (a key with the whitelist scope)."""
    with options.client() as client:
        change = client.whitelist_remove(package_id, udid, idempotency_key=idempotency_key)
    _show_change(change, options.output)
