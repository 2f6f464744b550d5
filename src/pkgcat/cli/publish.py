"""``pkgcat publish``: put a .deb into the served repository, for one source."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import anyio
import typer

from pkgcat.cli._common import fail, load_settings, opened, print_json, stdout
from pkgcat.repository.debs import DebLimits, Refused
from pkgcat.repository.publish import Published, publish
from pkgcat.storage.backends import open_blobs
from pkgcat.storage.blobs import BlobMismatch
from pkgcat.versions import Preference


def publish_command(
    file: Annotated[
        Path,
        typer.Argument(help="The .deb file.", exists=True, dir_okay=False, readable=True),
    ],
    source: Annotated[str, typer.Option("--source", help="The source that publishes it.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print what was published as JSON.")
    ] = False,
) -> None:
    """Publish a .deb: checked whole, stored by its SHA-256, served by `pkgcat serve` under /repo/."""
    settings = load_settings()
    with opened(settings) as engine:
        blobs = open_blobs(settings)

        async def run() -> Published:
            try:
                return await publish(
                    engine,
                    blobs,
                    file,
                    source,
                    limits=DebLimits.from_settings(settings),
                    preference=Preference(settings.architecture_preference),
                )
            finally:
                await blobs.close()

        try:
            done = anyio.run(run)
        except (Refused, BlobMismatch) as error:
            fail(f"refused: {error}")
    if as_json:
        print_json(
            {
                "package": done.package,
                "version": done.version,
                "architecture": done.architecture,
                "source": done.source,
                "sha256": done.sha256,
                "size": done.size,
                "filename": done.filename,
                "created": done.created,
            }
        )
        return
    what = f"{done.package} {done.version} ({done.architecture})"
    stdout.print(
        f"published {what} to {done.source!r}: {done.size} bytes, sha256 {done.sha256}"
        if done.created
        else f"{what} is published already with these bytes: nothing changed",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
