"""``pkgcat repo``: the served repository's OpenPGP signing keys."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from sqlalchemy import Engine

from pkgcat.cli import group
from pkgcat.cli._common import fail, load_settings, opened, print_listing, stdout
from pkgcat.cli._tables import Column, when
from pkgcat.config import Settings
from pkgcat.repository.featured import checked
from pkgcat.repository.keys import (
    KeyInfo,
    KeyProblem,
    NoPassphrase,
    create_key,
    export_keys,
    list_keys,
    retire_key,
)
from pkgcat.storage.writes.banners import BannerRefused, list_banners, remove_banner, set_banner

app = group("repo")
key_app = typer.Typer(
    help="The keys that sign the repository's indexes.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(key_app, name="key")
banner_app = typer.Typer(
    help="The banners Sileo and Zebra show atop a repository (sileo-featured.json).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(banner_app, name="banner")


def make_key(settings: Settings, engine: Engine) -> KeyInfo:
    """A new signing key in the settings' database; :class:`KeyProblem` without a passphrase."""
    passphrase = settings.repository_passphrase
    if passphrase is None:
        raise NoPassphrase
    return create_key(engine, passphrase.get_secret_value(), settings.repository_label)


@key_app.command("create")
def create() -> None:
    """Make a signing key (sealed with PKGCAT_REPOSITORY_PASSPHRASE); every key not retired signs."""
    settings = load_settings()
    with opened(settings) as engine:
        try:
            made = make_key(settings, engine)
        except KeyProblem as error:
            fail(str(error))
    stdout.print(
        f"signing key {made.fingerprint} created; clients need it: pkgcat repo key export",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


@key_app.command("list")
def list_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List the keys, oldest first: the ones not retired sign."""
    with opened(load_settings()) as engine:
        keys = list_keys(engine)
    records = [
        {
            "fingerprint": key.fingerprint,
            "user_id": key.user_id,
            "signing": key.retired_at is None,
            "created_at": when(key.created_at),
            "retired_at": when(key.retired_at),
        }
        for key in keys
    ]
    print_listing(
        [
            Column("fingerprint", kind="identifier"),
            Column("signing"),
            Column("created_at", kind="time"),
            Column("retired_at", kind="time"),
        ],
        records,
        as_json,
    )


@key_app.command("retire")
def retire(
    fingerprint: Annotated[str, typer.Argument(help="The key's fingerprint (or a unique prefix).")],
) -> None:
    """Stop signing with a key, once clients know its successor; the last key cannot go."""
    with opened(load_settings()) as engine:
        try:
            retired = retire_key(engine, fingerprint)
        except KeyProblem as error:
            fail(str(error))
    stdout.print(
        f"signing key {retired.fingerprint} retired: the next indexes are signed without it",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


@key_app.command("export")
def export(
    output: Annotated[
        Path | None, typer.Option("--output", help="Write to this file instead of stdout.")
    ] = None,
) -> None:
    """Print the public keys of every signing key, armored: the file apt's Signed-By names."""
    with opened(load_settings()) as engine:
        try:
            armored = export_keys(engine)
        except KeyProblem as error:
            fail(str(error))
    if output is None:
        typer.echo(armored, nl=False)
    else:
        output.write_text(armored)


SourceOption = Annotated[str, typer.Option("--source", help="The source whose package it shows.")]
PackageOption = Annotated[str, typer.Option("--package", help="The package the banner opens.")]


@banner_app.command("set")
def banner_set(
    source: SourceOption,
    package: PackageOption,
    image: Annotated[str, typer.Option("--image", help="The banner's image: an https address.")],
    title: Annotated[str, typer.Option("--title", help="The text on the banner.")],
) -> None:
    """Show a banner of the package atop its source's repository and the catalogue's (or
    change its image and title, in its place)."""
    with opened(load_settings()) as engine:
        try:
            image, title = checked(image, title)
            made = set_banner(engine, source, package, image, title, now=int(time.time()))
        except BannerRefused as error:
            fail(str(error), 2)
    stdout.print(
        f"banner {made.position} of {made.source!r}: {made.package}, served in "
        "sileo-featured.json from the next indexes on",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


@banner_app.command("list")
def banner_list(
    source: Annotated[str | None, typer.Option("--source", help="One source's only.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List the banners, by source and place."""
    with opened(load_settings()) as engine:
        found = list_banners(engine, source)
    records = [
        {
            "source": b.source,
            "position": b.position,
            "package": b.package,
            "title": b.title,
            "image": b.image_url,
        }
        for b in found
    ]
    print_listing(
        [
            Column("source"),
            Column("position"),
            Column("package", kind="identifier"),
            Column("title"),
            Column("image"),
        ],
        records,
        as_json,
    )


@banner_app.command("remove")
def banner_remove(source: SourceOption, package: PackageOption) -> None:
    """Take the package's banner down."""
    with opened(load_settings()) as engine:
        try:
            remove_banner(engine, source, package)
        except BannerRefused as error:
            fail(str(error))
    stdout.print(f"banner of {package} removed from {source!r}", markup=False, highlight=False)
