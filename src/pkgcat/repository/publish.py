"""Publishing a .deb: checked whole, stored by its digest, then recorded in one transaction.

:func:`publish` is the one way a file enters the repository: ``pkgcat publish``
calls it, and so does the API's upload. It knows nothing of HTTP or of the
command line: it takes a file on disk and a source name and returns what was
published, or raises :class:`~pkgcat.repository.debs.Refused` with the reason.

Order, so that a refused or interrupted publish leaves nothing behind:

1. the file is read and checked (:func:`~pkgcat.repository.debs.inspect_deb`),
   its package id must be lower case, and the catalogue is read once: the source
   must exist, the package must not belong to another source in any letter case,
   and a file of the same package, an equal version and the same architecture
   must be these very bytes (then the publish changes nothing);
2. the blob is stored, verified against its digest;
3. one transaction checks the catalogue again and writes the file's row, its
   record and its package row. If it fails (another publish took the package or
   an equal version meanwhile, the database is gone), the blob stored in step 2
   is deleted again, unless it was there before.

Ids and versions are compared as apt and dpkg compare them, since they are what
a device installs by: apt matches package names without regard to case (so
``COM.ALPHA.TWEAK`` would be an upgrade of ``com.alpha.tweak``), and dpkg finds
``0:1.0``, ``1.0-0`` and ``1.00`` equal to ``1.0``. A published (package,
version, architecture) never changes its bytes, however the version is spelt:
the same bytes sent again change nothing (``created`` false; being the same
control file, they spell the version as before); other bytes under any equal
spelling are refused, the message naming the stored spelling.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import anyio
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from pkgcat.repository.debs import DebInfo, DebLimits, Refused, check_size, inspect_deb
from pkgcat.repository.reserved import reserved_problem
from pkgcat.storage.blobs import BlobStore
from pkgcat.storage.writes.published import (
    KeyTaken,
    Owner,
    check_key,
    read_owner,
    source_address,
    write_published,
)
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


def _refusal(owner: Owner, source: str, package: str, version: str, architecture: str) -> str:
    """Why the catalogue refuses the file: the owner's source, or the stored spelling."""
    if owner.package_source is not None and owner.package_source != source:
        if owner.package == package:
            return f"package {package!r} belongs to source {owner.package_source!r}"
        return (
            f"package {package!r} belongs to source {owner.package_source!r} "
            f"(as {owner.package!r}: apt reads package names without regard to case)"
        )
    if owner.package is not None and owner.package != package:
        return (
            f"package {package!r} is {owner.package!r} in source {source!r} already "
            "(apt reads package names without regard to case)"
        )
    return (
        f"{package} {owner.stored_version} ({architecture}) is published already with other "
        f"bytes; publish a new version"
        + ("" if owner.stored_version == version else f" ({version!r} is the same version)")
    )


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
    if package != package.lower():
        # Debian policy 5.6.1: "Package names ... must consist only of lower case letters
        # (a-z), digits (0-9), plus (+) and minus (-) signs, and periods (.)".
        raise Refused(
            f"control: Package: {package!r} must be lower case "
            f"({package.lower()!r}; Debian policy 5.6.1)"
        )
    if (problem := reserved_problem(package)) is not None:
        raise Refused(f"control: Package: {problem}")
    owner = read_owner(engine, *info.key)
    try:
        new = check_key(owner, source, package, info.digests.sha256)
    except KeyTaken:
        raise Refused(_refusal(owner, source, package, version, architecture)) from None
    return info, source_id, new


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
            new = await anyio.to_thread.run_sync(
                lambda: write_published(
                    engine,
                    source_id=source_id,
                    source=source,
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
            if isinstance(error, KeyTaken):
                raise Refused(_refusal(error.owner, source, *info.key)) from None
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
