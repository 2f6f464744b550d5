"""Publishing a .deb: checked whole, stored by its digest, then recorded in one transaction.

:func:`publish` is the one way a file enters the repository: ``pkgcat publish``
calls it, and so does the API's upload. It knows nothing of HTTP or of the
command line: it takes a file on disk and a source name and returns what was
published, or raises :class:`~pkgcat.repository.debs.Refused` with the reason.

Order, so that a refused or interrupted publish leaves nothing behind:

1. the file is read and checked (:func:`~pkgcat.repository.debs.inspect_deb`),
   and the catalogue is read once: the source must exist, the package must not
   belong to another source, and a file of the same package, version and
   architecture must be these very bytes (then the publish changes nothing);
2. the blob is stored, verified against its digest;
3. one transaction writes the file's row, its record and its package row. If
   it fails (another publish took the same version meanwhile, the database is
   gone), the blob stored in step 2 is deleted again, unless it was there before.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import anyio
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from pkgcat.repository.debs import DebInfo, DebLimits, Refused, check_size, inspect_deb
from pkgcat.storage.blobs import BlobStore
from pkgcat.storage.writes.published import read_owner, source_address, write_published
from pkgcat.versions import Preference


@dataclass(frozen=True, slots=True)
class Published:
    """What a publish did."""

    package: str
    version: str
    architecture: str
    source: str
    sha256: str
    size: int
    filename: str
    """Its path in the repository (the Packages ``Filename``)."""
    created: bool
    """False when these very bytes were published already: nothing changed."""


def _inspect(
    engine: Engine, path: Path, source: str, limits: DebLimits
) -> tuple[DebInfo, int, bool]:
    """Check the file against itself, then against the catalogue; the source's id and whether new."""
    check_size(path, limits.file_bytes)
    found = source_address(engine, source)
    if found is None:
        raise Refused(f"no source named {source!r} (pkgcat source add creates one)")
    source_id, base_url = found
    # The source's address resolves relative links (Icon...), as an import of it would.
    info = inspect_deb(path, base_url=base_url, limits=limits)
    package, version, architecture = info.key
    owner = read_owner(engine, *info.key)
    if owner.package_source is not None and owner.package_source != source:
        raise Refused(f"package {package!r} belongs to source {owner.package_source!r}")
    if owner.stored is not None and owner.stored != info.digests.sha256:
        raise Refused(
            f"{package} {version} ({architecture}) is published already with other bytes; "
            "publish a new version"
        )
    return info, source_id, owner.stored is None


async def publish(
    engine: Engine,
    blobs: BlobStore,
    path: Path,
    source: str,
    *,
    limits: DebLimits,
    preference: Preference,
    now: int | None = None,
) -> Published:
    """Publish the .deb at ``path`` to ``source``; :class:`Refused` (nothing stored) when unfit."""
    info, source_id, new = await anyio.to_thread.run_sync(_inspect, engine, path, source, limits)
    found = info.digests
    record = info.record
    if new:
        written = await blobs.put(path, found.sha256)
        try:
            await anyio.to_thread.run_sync(
                lambda: write_published(
                    engine,
                    source_id=source_id,
                    record=record,
                    control=info.control,
                    digests=(found.size, found.md5sum, found.sha1, found.sha256, found.sha512),
                    preference=preference,
                    now=int(time.time()) if now is None else now,
                )
            )
        except BaseException as error:
            if written:
                with anyio.CancelScope(shield=True):
                    await blobs.delete(found.sha256)
            if isinstance(error, IntegrityError):
                raise Refused(
                    f"{record.package} {record.version} ({record.architecture}) was published "
                    "by another request meanwhile"
                ) from None
            raise
    elif not await blobs.verify(found.sha256):
        # Listed, but its blob is missing or damaged: these bytes, checked, restore it.
        await blobs.put(path, found.sha256)
    return Published(
        package=record.package,
        version=record.version,
        architecture=record.architecture,
        source=source,
        sha256=found.sha256,
        size=found.size,
        filename=record.filename,
        created=new,
    )
