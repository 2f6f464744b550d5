"""Moving an imported repository in: its .deb files fetched, checked and stored as blobs.

``pkgcat import-repo --mirror`` imports the repository's index as any import
does, then hands the same repository to :func:`mirror`. For every stanza of
its indexes whose record the import kept, the file named by ``Filename`` is
read through the repository's reader (so through :mod:`pkgcat.net` for an
address: no private or metadata address, caps and deadline), then checked,
each before anything of it is stored:

1. the index gives its SHA-256 and its size, within ``PKGCAT_PUBLISH_MAX_BYTES``;
2. the bytes read have that size, that SHA-256, and the MD5 and SHA-512 the
   index gives, if it does;
3. it is a .deb (:func:`~pkgcat.repository.debs.inspect_deb`) whose control
   file names the same package, version and architecture as the stanza.

Then the blob is stored (verified) and the file's row written, with the
stanza as the repository served it (so the served index shows what the old
one did), but for the fields clients render as links or rich text: a link that is
not an http(s) address is left out, markup is taken out of the text
(:func:`pkgcat.ingest.rendered.clean`). A file that fails a check is reported with its package and the
reason, and nothing of it is stored; the others go on. A file held already
with the same bytes is left as it is.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
from debian.deb822 import Deb822
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from pkgcat.ingest.control import iter_stanzas, quiet_python_debian
from pkgcat.ingest.errors import IngestError
from pkgcat.ingest.rendered import clean
from pkgcat.ingest.repository import Repository
from pkgcat.repository.debs import COMPUTED, DebLimits, Refused, digests, inspect_deb
from pkgcat.storage.blobs import BlobMismatch, BlobStore
from pkgcat.storage.writes.published import (
    FileRow,
    imported_keys,
    source_address,
    stored_file,
    write_mirrored,
)

OnFile = Callable[[int, int], None]
"""``progress(files_done, files_total)``."""


@dataclass(frozen=True, slots=True)
class Listed:
    """A .deb as an index lists it."""

    package: str
    version: str
    architecture: str
    filename: str
    size: int | None
    sha256: str
    md5sum: str
    sha512: str
    control: str
    """The stanza without the fields about the file, as the repository served it."""

    @property
    def key(self) -> tuple[str, str, str]:
        return self.package, self.version, self.architecture

    def __str__(self) -> str:
        return f"{self.package} {self.version} ({self.architecture})"


@dataclass(frozen=True, slots=True)
class Mirrored:
    """What became of one listed file."""

    file: Listed
    outcome: str
    """``stored``, ``held`` (these bytes were there already) or ``refused``."""
    reason: str = ""


@dataclass(frozen=True, slots=True)
class MirrorSummary:
    files: list[Mirrored]

    def count(self, outcome: str) -> int:
        return sum(1 for f in self.files if f.outcome == outcome)

    @property
    def stored_bytes(self) -> int:
        return sum(f.file.size or 0 for f in self.files if f.outcome == "stored")

    @property
    def refused(self) -> list[Mirrored]:
        return [f for f in self.files if f.outcome == "refused"]

    def as_dict(self) -> dict[str, object]:
        return {
            "stored": self.count("stored"),
            "held": self.count("held"),
            "bytes": self.stored_bytes,
            "refused": [
                {
                    "package": f.file.package,
                    "version": f.file.version,
                    "architecture": f.file.architecture,
                    "reason": f.reason,
                }
                for f in self.refused
            ],
        }


def listed(repo: Repository, wanted: set[tuple[str, str, str]]) -> list[Listed]:
    """The files of the repository's indexes whose (package, version, architecture) is wanted."""
    found: dict[tuple[str, str, str], Listed] = {}
    with quiet_python_debian():
        for index in repo.indexes:
            for _line, start, end in iter_stanzas(index.data):
                stanza = Deb822(index.data[start:end].decode("utf-8", "replace"))
                key = (
                    stanza.get("Package", ""),
                    stanza.get("Version", ""),
                    stanza.get("Architecture", ""),
                )
                if key not in wanted or key in found:
                    continue
                size = stanza.get("Size", "")
                fields = {
                    name: stanza[name]
                    for name in ("Filename", "SHA256", "MD5sum", "SHA512")
                    if name in stanza
                }
                for name in list(stanza):
                    if name.lower() in COMPUTED:
                        del stanza[name]
                clean(stanza)
                found[key] = Listed(
                    *key,
                    filename=fields.get("Filename", "").strip(),
                    size=int(size) if size.strip().isdigit() else None,
                    sha256=fields.get("SHA256", "").strip().lower(),
                    md5sum=fields.get("MD5sum", "").strip().lower(),
                    sha512=fields.get("SHA512", "").strip().lower(),
                    control=stanza.dump().rstrip("\n"),
                )
    return list(found.values())


def _check_bytes(file: Listed, data: bytes) -> None:
    """:class:`Refused` unless ``data`` is what the index says of the file."""
    if len(data) != file.size:
        raise Refused(f"{len(data)} bytes read, the index says {file.size}")
    for name, expected, algorithm in (
        ("SHA256", file.sha256, "sha256"),
        ("MD5sum", file.md5sum, "md5"),
        ("SHA512", file.sha512, "sha512"),
    ):
        if expected:
            found = hashlib.new(algorithm, data, usedforsecurity=False).hexdigest()
            if found != expected:
                raise Refused(f"its {name} is {found}, the index says {expected}")


class _Mirror:
    def __init__(
        self, engine: Engine, blobs: BlobStore, repo: Repository, source_id: int, base_url: str,
        limits: DebLimits,
    ) -> None:  # fmt: skip
        self.engine, self.blobs, self.repo = engine, blobs, repo
        self.source_id, self.base_url, self.limits = source_id, base_url, limits

    def _fetch(self, file: Listed, held: str | None) -> Path:
        """The file read and checked, in a temporary file; :class:`Refused` with the reason."""
        if not file.filename:
            raise Refused("the index gives no Filename")
        if not file.sha256 or file.size is None:
            raise Refused("the index gives no SHA256 and Size to check the file against")
        if file.size > self.limits.file_bytes:
            most = self.limits.file_bytes
            raise Refused(f"too large: {file.size} bytes, over the limit of {most}")
        if held is not None and held != file.sha256:
            raise Refused("published already with other bytes")
        try:
            data = self.repo.read(file.filename)
        except IngestError as error:
            raise Refused(str(error)) from None
        if data is None:
            raise Refused(f"{file.filename}: not found")
        _check_bytes(file, data)
        handle, name = tempfile.mkstemp(prefix="pkgcat-mirror-", suffix=".deb")
        path = Path(name)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            info = inspect_deb(path, base_url=self.base_url, limits=self.limits, imported=True)
            if info.key != file.key:
                raise Refused(
                    "its control file names {} {} ({}), not the index's".format(*info.key)
                )
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return path

    async def one(self, file: Listed) -> Mirrored:
        held = await anyio.to_thread.run_sync(stored_file, self.engine, *file.key)
        if held is not None and held == file.sha256 and await self.blobs.size(held) == file.size:
            return Mirrored(file, "held")
        try:
            path = await anyio.to_thread.run_sync(self._fetch, file, held)
        except Refused as error:
            return Mirrored(file, "refused", str(error))
        try:
            found = await anyio.to_thread.run_sync(digests, path)
            written = await self.blobs.put(path, found.sha256)
            if held is not None:  # listed, but its blob was missing: restored, nothing to write
                return Mirrored(file, "stored")
            try:
                sums = (found.size, found.md5sum, found.sha1, found.sha256, found.sha512)
                row = FileRow(self.source_id, file.key, file.control, sums, int(time.time()))
                await anyio.to_thread.run_sync(write_mirrored, self.engine, row)
            except BaseException as error:
                if written:
                    with anyio.CancelScope(shield=True):
                        await self.blobs.delete(found.sha256)
                if isinstance(error, IntegrityError):
                    return Mirrored(file, "refused", "stored by another command meanwhile")
                raise
        except BlobMismatch as error:
            return Mirrored(file, "refused", str(error))
        finally:
            path.unlink(missing_ok=True)
        return Mirrored(file, "stored")


async def mirror(
    engine: Engine,
    blobs: BlobStore,
    repo: Repository,
    source: str,
    *,
    limits: DebLimits,
    progress: OnFile | None = None,
) -> MirrorSummary:
    """Fetch, check and store every file of ``repo`` that ``source``'s records list."""
    found = await anyio.to_thread.run_sync(source_address, engine, source)
    if found is None:
        raise IngestError(f"no source named {source!r}")
    source_id, base_url = found
    wanted = await anyio.to_thread.run_sync(imported_keys, engine, source_id)
    files = listed(repo, wanted)
    work = _Mirror(engine, blobs, repo, source_id, base_url, limits)
    done: list[Mirrored] = []
    for file in files:
        done.append(await work.one(file))
        if progress is not None:
            progress(len(done), len(files))
    return MirrorSummary(done)
