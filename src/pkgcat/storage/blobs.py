"""Blob storage: the .deb files, each stored under the SHA-256 of its bytes.

One seam, :class:`BlobStore`, with two backends that ``open_blobs`` in
:mod:`pkgcat.storage.backends` chooses from the settings:

- :class:`DirectoryBlobs` (here), the embedded default: a directory beside the
  SQLite file. A write goes to a temporary file in the same directory, is
  hashed on the way, synced, and renamed into place only when its digest is
  the one expected, so a reader never sees a partial or a wrong file.
- :class:`pkgcat.storage.s3.S3Blobs`, for several hosts: any S3-compatible
  object storage, through obstore (the ``s3`` extra).

A blob is trusted only once verified against its name: a write checks what
was stored (the local file as written, the object as read back), and a write
of a blob already present checks the copy there before keeping it. Serving
does not hash the file again at every request: that is what the write bought.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Protocol

import anyio

CHUNK = 1024 * 1024
"""Bytes read or hashed at a time."""
_DIGEST = re.compile(r"[0-9a-f]{64}")


class BlobMismatch(Exception):
    """The bytes given or stored do not hash to the name they were stored under."""


class BlobsUnavailable(Exception):
    """The store cannot be reached or did not answer, for now (an object store down, its
    retries spent): the request is answered 503, not 500. The message names the store and
    what failed, never a credential."""


def check_digest(digest: str) -> str:
    """``digest`` when it is a SHA-256 in lower-case hex, else :class:`ValueError`."""
    if not _DIGEST.fullmatch(digest):
        raise ValueError(f"{digest[:80]!r} is not a SHA-256 digest (64 lower-case hex digits)")
    return digest


def blob_key(digest: str) -> str:
    """Where a blob lives under the store's root: ``ab/abcdef...`` (256 folders, not one huge one)."""
    return f"{digest[:2]}/{check_digest(digest)}"


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class BlobStore(Protocol):
    """Content-addressed storage of files, by the SHA-256 of their bytes."""

    name: str
    """What the store is, for messages and logs (never a credential)."""

    async def put(self, source: Path, digest: str) -> bool:
        """Store the file ``source`` as the blob ``digest``, atomically and verified.

        Returns True when it was written, False when a verified copy was there
        already. Raises :class:`BlobMismatch` (and stores nothing) when the
        file's bytes do not hash to ``digest``.
        """
        ...

    async def size(self, digest: str) -> int | None:
        """The blob's size in bytes, or None when the store does not hold it."""
        ...

    async def verify(self, digest: str) -> bool:
        """Whether the store holds the blob and its bytes hash to its name (reads it whole)."""
        ...

    def read(
        self, digest: str, start: int = 0, end: int | None = None
    ) -> AsyncGenerator[bytes, None]:
        """The blob's bytes from ``start`` up to ``end`` (exclusive; None: its end), in chunks.

        :class:`FileNotFoundError` when the store does not hold it.
        """
        ...

    def local_path(self, digest: str) -> Path | None:
        """The blob's file on this host, for a zero-copy send; None where there is none (S3)."""
        ...

    async def signed_url(self, digest: str, seconds: int) -> str | None:
        """An address from which anyone may GET the blob for ``seconds`` (an S3 presigned
        URL), to redirect a download to; None where there is none (the directory store)."""
        ...

    async def delete(self, digest: str) -> None:
        """Remove the blob; nothing happens when it is not there."""
        ...

    async def ready(self) -> None:
        """Return when the store answers now (``/readyz``); raise :class:`BlobsUnavailable`
        when it does not."""
        ...

    async def close(self) -> None: ...


def default_blob_dir(database_url: str, name: str = "blobs") -> Path:
    """The directory store's default: ``blobs`` beside the SQLite file, else ``./pkgcat-blobs``
    (``name`` for another directory of the same kind: ``indexes``)."""
    from sqlalchemy.engine import make_url

    url = make_url(database_url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        return Path(url.database).resolve().parent / name
    return Path(f"pkgcat-{name}").resolve()


class DirectoryBlobs:
    """Blobs as files of a local directory: ``ROOT/ab/abcdef...``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.name = f"directory {root}"

    def _path(self, digest: str) -> Path:
        return self.root / blob_key(digest)

    def local_path(self, digest: str) -> Path | None:
        path = self._path(digest)
        return path if path.is_file() else None

    async def signed_url(self, digest: str, seconds: int) -> str | None:  # noqa: ARG002
        return None

    async def put(self, source: Path, digest: str) -> bool:
        return await anyio.to_thread.run_sync(self._put, source, digest)

    def _put(self, source: Path, digest: str) -> bool:
        target = self._path(digest)
        if target.is_file() and file_sha256(target) == digest:
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        # In the target's own directory: the rename below stays on one file system.
        handle, temporary = tempfile.mkstemp(prefix=".incoming-", dir=target.parent)
        try:
            hashed = hashlib.sha256()
            with os.fdopen(handle, "wb") as out, source.open("rb") as given:
                while chunk := given.read(CHUNK):
                    hashed.update(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            if hashed.hexdigest() != digest:
                raise BlobMismatch(f"the file's SHA-256 is {hashed.hexdigest()}, not {digest}")
            os.chmod(temporary, 0o644)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        # The rename is durable once the directory's entry is.
        directory = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
        return True

    async def size(self, digest: str) -> int | None:
        try:
            return self._path(digest).stat().st_size
        except FileNotFoundError:
            return None

    async def verify(self, digest: str) -> bool:
        path = self._path(digest)
        if not path.is_file():
            return False
        return await anyio.to_thread.run_sync(file_sha256, path) == digest

    async def read(
        self, digest: str, start: int = 0, end: int | None = None
    ) -> AsyncGenerator[bytes, None]:
        path = self._path(digest)
        file = await anyio.open_file(path, "rb")
        try:
            await file.seek(start)
            left = None if end is None else max(end - start, 0)
            while left is None or left > 0:
                chunk = await file.read(CHUNK if left is None else min(CHUNK, left))
                if not chunk:
                    break
                if left is not None:
                    left -= len(chunk)
                yield chunk
        finally:
            await file.aclose()

    async def delete(self, digest: str) -> None:
        self._path(digest).unlink(missing_ok=True)

    async def ready(self) -> None:
        # The root is made at the first publish: absent, there is nothing to serve yet.
        if self.root.exists() and not os.access(self.root, os.R_OK | os.X_OK):
            raise BlobsUnavailable(f"{self.name}: not readable")

    async def close(self) -> None:
        return None
