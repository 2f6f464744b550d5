"""Blobs in S3-compatible object storage, through obstore (``pip install 'pkgcat[s3]'``).

Each blob is one object, ``PREFIX/sha256/ab/abcdef...``. A write is a single
conditional PUT (``If-None-Match: *``, so an object once there is never
overwritten by a racing write), sent with its SHA-256 checksum for the server
to check in transit, and then read back and hashed: only an object whose bytes
hash to its name is trusted. A write that finds the object there already
verifies that copy instead, and replaces it only when it is wrong.

S3 PUTs are atomic: no reader ever sees a partial object.

An object store that is down (refused connections, 5xx answers) is told within the
request's deadline: obstore retries at most :data:`RETRIES` times, within half the
deadline (its own default is 10 retries over up to 3 minutes, which held each download and
upload 2 to 5 s before a 500), and the error it then raises
(:class:`obstore.exceptions.GenericError`) is :class:`~pkgcat.storage.blobs.BlobsUnavailable`
here, which the server answers 503 with ``Retry-After``.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import obstore
from obstore.exceptions import AlreadyExistsError, GenericError
from obstore.store import S3Store

from pkgcat.storage.blobs import CHUNK, BlobMismatch, BlobsUnavailable, blob_key, file_sha256

RETRIES = 3
"""Retries of a request the store failed (refused, dropped, 5xx), within half the deadline."""


class S3Blobs:
    """Blobs as objects of one bucket."""

    def __init__(
        self,
        bucket: str,
        *,
        endpoint: str | None = None,
        region: str = "us-east-1",
        prefix: str = "",
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        deadline: float = 5.0,
    ) -> None:
        """``deadline``: the seconds a request may wait for the store (the server's
        ``PKGCAT_REQUEST_DEADLINE``); retries and a connection's setup stop at half of it."""
        credentials: dict[str, str] = {}
        if access_key_id is not None and secret_access_key is not None:
            credentials = {"access_key_id": access_key_id, "secret_access_key": secret_access_key}
        self._store = S3Store(
            bucket,
            endpoint=endpoint,
            region=region,
            # Path-style addresses: what S3-compatible servers (SeaweedFS, MinIO...) all accept.
            virtual_hosted_style_request=False,
            checksum_algorithm="sha256",
            client_options={
                "allow_http": bool(endpoint and endpoint.startswith("http://")),
                "connect_timeout": timedelta(seconds=deadline / 2),
            },
            retry_config={
                "max_retries": RETRIES,
                "retry_timeout": timedelta(seconds=deadline / 2),
                "backoff": {
                    "init_backoff": timedelta(milliseconds=50),
                    "max_backoff": timedelta(milliseconds=500),
                    "base": 2,
                },
            },
            **credentials,  # type: ignore[arg-type]  # obstore's config is a TypedDict of many keys
        )
        self._prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.name = f"s3 bucket {bucket}" + (f" at {endpoint}" if endpoint else "")

    @contextmanager
    def _reaching(self) -> Iterator[None]:
        """obstore's error for a store that failed every retry, as :class:`BlobsUnavailable`."""
        try:
            yield
        except GenericError as error:
            # Its first line names the request and the retries (the rest is a debug dump).
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise BlobsUnavailable(f"{self.name}: {first[:300]}") from error

    def _key(self, digest: str) -> str:
        return f"{self._prefix}sha256/{blob_key(digest)}"

    def local_path(self, digest: str) -> Path | None:  # noqa: ARG002 - no object has a local file
        return None

    async def signed_url(self, digest: str, seconds: int) -> str:
        # Signed here, with the store's credentials: no request to the server.
        url: str = await obstore.sign_async(
            self._store, "GET", self._key(digest), timedelta(seconds=seconds)
        )
        return url

    async def put(self, source: Path, digest: str) -> bool:
        import anyio

        found = await anyio.to_thread.run_sync(file_sha256, source)
        if found != digest:
            raise BlobMismatch(f"the file's SHA-256 is {found}, not {digest}")
        key = self._key(digest)
        try:
            with self._reaching():
                await obstore.put_async(self._store, key, source, mode="create")
        except AlreadyExistsError:
            if await self.verify(digest):
                return False
            # A wrong object under this name (written by hand, or damaged): replaced.
            with self._reaching():
                await obstore.put_async(self._store, key, source, mode="overwrite")
        if not await self.verify(digest):
            await self.delete(digest)
            raise BlobMismatch(f"the object stored as {digest} does not hash to it")
        return True

    async def size(self, digest: str) -> int | None:
        try:
            with self._reaching():
                meta = await obstore.head_async(self._store, self._key(digest))
        except FileNotFoundError:
            return None
        return int(meta["size"])

    async def verify(self, digest: str) -> bool:
        hashed = hashlib.sha256()
        try:
            async for chunk in self.read(digest):
                hashed.update(chunk)
        except FileNotFoundError:
            return False
        return hashed.hexdigest() == digest

    async def read(
        self, digest: str, start: int = 0, end: int | None = None
    ) -> AsyncGenerator[bytes, None]:
        if end is not None and end <= start:
            return
        options: dict[str, object] = {}
        if start or end is not None:
            # obstore's ranges end before ``end``; an open range is {"offset": start}.
            options["range"] = (start, end) if end is not None else {"offset": start}
        with self._reaching():
            result = await obstore.get_async(
                self._store,
                self._key(digest),
                options=options or None,  # type: ignore[arg-type]  # a GetOptions TypedDict
            )
            async for chunk in result.stream(min_chunk_size=CHUNK):
                yield bytes(chunk)

    async def delete(self, digest: str) -> None:
        try:
            with self._reaching():
                await obstore.delete_async(self._store, self._key(digest))
        except FileNotFoundError:
            return

    async def ready(self) -> None:
        # A HEAD of a name no blob has: "not found" is an answer, so the store is up.
        try:
            with self._reaching():
                await obstore.head_async(self._store, f"{self._prefix}sha256/readyz")
        except FileNotFoundError:
            return

    async def close(self) -> None:
        return None
