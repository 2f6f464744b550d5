"""``pkgcat key``: secret and public keys (stored as hashes; a key is shown once)."""

from __future__ import annotations

from typing import Annotated

import typer

from pkgcat.cli import group
from pkgcat.cli._common import admin, print_listing, stdout
from pkgcat.cli._tables import Column, when
from pkgcat.cli.apps import show_key
from pkgcat.domain import KEY_SCOPES

app = group("key")

PREFIX_HELP = "The key's display prefix, e.g. pkc_AbCd1234 (or pkp_... for a public key)."


def _say(line: str) -> None:
    stdout.print(line, markup=False, highlight=False, soft_wrap=True)


@app.command("create")
def create(
    source: Annotated[str, typer.Option("--source", help="Source of the application.")],
    application: Annotated[str, typer.Option("--app", help="Name of the application.")],
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            help=f"A write the key may make, besides reading (repeatable): "
            f"{', '.join(s for s in KEY_SCOPES if s != 'read')}. Without it the key only reads.",
        ),
    ] = None,
    public: Annotated[
        bool,
        typer.Option(
            "--public",
            help="A public key (pkp_...), to ship inside a tweak: it may only check whether a "
            "device owns a package of the source, within its own rate limits.",
        ),
    ] = False,
    package: Annotated[
        str | None,
        typer.Option(
            "--package",
            help="With --public: the one package of the source the key answers for (a DRM "
            "API's package token).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Add a key to an application (for rotation, to grant writes, or a public key for a
    tweak) and print it, once."""
    with admin() as handle:
        issued = handle.create_key(
            source,
            application,
            tuple(scope or ()),
            kind="public" if public else "secret",
            package=package,
        )
    show_key(issued, as_json)


@app.command("list")
def list_keys(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List keys by their display prefix (the keys themselves are not stored)."""
    with admin() as handle:
        rows = handle.list_keys()
    records = [
        {
            "prefix": r.prefix,
            "source": r.source,
            "application": r.application,
            "created_at": when(r.created_at),
            "last_used_at": when(r.last_used_at) or None,
            "revoked_at": when(r.revoked_at) or None,
            "scopes": r.scopes,
            "kind": r.kind,
            "package": r.package,
        }
        for r in rows
    ]
    print_listing(
        [
            Column("prefix", kind="identifier"),
            Column("source", kind="identifier"),
            Column("application", kind="identifier"),
            Column("created_at", "created (UTC)", "time"),
            Column("last_used_at", "last used (UTC)", "time"),
            Column("revoked_at", "revoked (UTC)", "time"),
            Column("scopes", kind="identifier"),
            Column("kind", kind="identifier"),
            Column("package", kind="identifier"),
        ],
        records,
        as_json,
    )


@app.command("revoke")
def revoke(prefix: Annotated[str, typer.Argument(help=PREFIX_HELP)]) -> None:
    """Revoke a key (secret or public): requests with it get code 5 from then on.

    Revoking a key that is revoked already changes nothing, says so, and exits 0.
    """
    with admin() as handle:
        done = handle.revoke_key(prefix)
    key = done.key
    of = f"{key.prefix} of {key.application!r} ({key.source})"
    if done.already:
        _say(f"{of} was already revoked at {when(key.revoked_at)}; nothing changed")
    else:
        _say(f"revoked {of}")


@app.command("delete")
def delete(prefix: Annotated[str, typer.Argument(help=PREFIX_HELP)]) -> None:
    """Delete a revoked key from the list, with its times; a live key must be revoked first."""
    with admin() as handle:
        key = handle.delete_key(prefix)
    _say(
        f"deleted {key.prefix} of {key.application!r} ({key.source}), revoked at "
        f"{when(key.revoked_at)}"
    )
