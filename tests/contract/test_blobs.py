"""The blob store's contract: the same tests on the directory store and on a real S3 server."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from pkgcat.config import Settings
from pkgcat.storage.backends import open_blobs
from pkgcat.storage.blobs import BlobMismatch, BlobStore, DirectoryBlobs
from tests.seaweed import S3Server

STORES = ("directory", "s3")


@pytest.fixture(params=STORES)
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    """A store of the test's own, chosen by settings as the server chooses it."""
    settings: dict[str, Any] = {"blob_dir": str(tmp_path / "blobs")}
    if request.param == "s3":
        server: S3Server = request.getfixturevalue("s3_server")
        settings = server.settings(f"test-{uuid.uuid4().hex}")
    return open_blobs(Settings(**settings))


def written(tmp_path: Path, data: bytes, name: str = "file.deb") -> tuple[Path, str]:
    path = tmp_path / name
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


async def collect(chunks: AsyncIterator[bytes]) -> bytes:
    return b"".join([chunk async for chunk in chunks])


def test_a_stored_blob_reads_back_whole_and_by_range(blobs: BlobStore, tmp_path: Path) -> None:
    data = bytes(range(256)) * 5000  # over one read chunk
    path, digest = written(tmp_path, data)

    async def scenario() -> None:
        assert await blobs.size(digest) is None
        assert await blobs.put(path, digest) is True
        assert await blobs.size(digest) == len(data)
        assert await collect(blobs.read(digest)) == data
        assert await collect(blobs.read(digest, 100, 200)) == data[100:200]
        assert await collect(blobs.read(digest, len(data) - 10)) == data[-10:]
        assert await blobs.verify(digest)

    anyio.run(scenario)


def test_a_file_that_does_not_hash_to_its_name_is_not_stored(
    blobs: BlobStore, tmp_path: Path
) -> None:
    path, _ = written(tmp_path, b"the real bytes")
    claimed = hashlib.sha256(b"other bytes").hexdigest()

    async def scenario() -> None:
        with pytest.raises(BlobMismatch):
            await blobs.put(path, claimed)
        assert await blobs.size(claimed) is None
        assert not await blobs.verify(claimed)

    anyio.run(scenario)


def test_storing_the_same_blob_again_is_a_verified_no_op(blobs: BlobStore, tmp_path: Path) -> None:
    path, digest = written(tmp_path, b"same bytes twice")

    async def scenario() -> None:
        assert await blobs.put(path, digest) is True
        assert await blobs.put(path, digest) is False
        assert await collect(blobs.read(digest)) == b"same bytes twice"

    anyio.run(scenario)


def test_a_missing_blob_is_reported_and_deleting_it_is_harmless(blobs: BlobStore) -> None:
    digest = hashlib.sha256(b"never stored").hexdigest()

    async def scenario() -> None:
        with pytest.raises(FileNotFoundError):
            await collect(blobs.read(digest))
        await blobs.delete(digest)
        assert not await blobs.verify(digest)

    anyio.run(scenario)


def test_a_deleted_blob_is_gone(blobs: BlobStore, tmp_path: Path) -> None:
    path, digest = written(tmp_path, b"short-lived")

    async def scenario() -> None:
        await blobs.put(path, digest)
        await blobs.delete(digest)
        assert await blobs.size(digest) is None

    anyio.run(scenario)


def test_a_damaged_copy_is_replaced_by_the_next_write(tmp_path: Path) -> None:
    """The directory store trusts a file already there only once it hashes to its name."""
    store = DirectoryBlobs(tmp_path / "blobs")
    path, digest = written(tmp_path, b"good bytes")

    async def scenario() -> None:
        await store.put(path, digest)
        stored = store.local_path(digest)
        assert stored is not None
        stored.write_bytes(b"rotted bytes")
        assert not await store.verify(digest)
        assert await store.put(path, digest) is True
        assert await store.verify(digest)
        # No temporary file is left behind in the store.
        assert [p.name for p in stored.parent.iterdir()] == [digest]

    anyio.run(scenario)


def test_the_directory_store_defaults_to_beside_the_sqlite_file(tmp_path: Path) -> None:
    store = open_blobs(Settings(database_url=f"sqlite:///{tmp_path / 'cat.db'}"))
    assert isinstance(store, DirectoryBlobs)
    assert store.root == tmp_path / "blobs"
