"""The served repository of one worker: indexes published once for every host, served by all.

Exactly one worker among all hosts, the one holding the publisher's lease
(:mod:`pkgcat.storage.publications`), builds the index set when the catalogue
generation moves (any publish, any change to an online flag or a signing key moves it,
see migration 0006), a Valid-Until period begins or a sale starts or ends, and
publishes it: the Packages files into the blob store (the S3 store when set, so every
host reads them), then one row numbered above every one before, holding the signed
files whole. Every worker serves the highest publication it has read, never a lower
one: a background task of each worker reads the newest every :data:`POLL_SECONDS`,
requested or not, and a request for a Release or a Packages file reads its number
first, so that no worker answers with an older one than another worker of its host
answered before. A by-hash file a worker does not hold (named by a Release another
worker or host handed out) is looked up among those published in the last hour and
read from the blob store: what a signed Release names is found on every worker.

Each worker also builds its own set, off the request path, from one snapshot (the
publisher's is the one it publishes): its depictions and the list of files its pool
serves. A request never waits for a build, except the very first one of a worker,
when there is nothing to serve yet.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import hashlib
import logging
import os
import secrets
import tempfile
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import anyio
import orjson
import pysequoia as pgp
from sqlalchemy import Engine

from pkgcat.config import Settings
from pkgcat.outages import Outage
from pkgcat.repository.grants import Grant, Grants
from pkgcat.repository.indexes import (
    HASHES,
    MEDIA_TYPES,
    Identity,
    IndexFile,
    IndexSet,
    build,
    entity_tag,
)
from pkgcat.repository.keys import NoPassphrase, Signers, clearsign, detach_sign, download_key
from pkgcat.repository.ondisk import IndexDirectory
from pkgcat.storage.backends import database_unavailable
from pkgcat.storage.blobs import BlobStore, BlobsUnavailable, default_blob_dir
from pkgcat.storage.publications import (
    KEEP_MS,
    Named,
    Publication,
    by_hash,
    hold,
    let_go,
    newest,
    newest_number,
    publish,
)
from pkgcat.storage.served import (
    claim_grant,
    finish_grant,
    peek_grant,
    read_served,
    unfinish_grant,
)

log = logging.getLogger("pkgcat.repository")
indexes_log = logging.getLogger("pkgcat.repository.indexes")

POLL_SECONDS = 0.5
"""How often each worker looks for a change to build and for a newer publication."""
LEASE_MS = 5000
"""The publisher's lease: renewed every poll; another worker publishes once it lapses."""
FIRST_SECONDS = 30.0
"""How long a worker's first request waits for a first publication (another worker's)."""
SIGNED_NAMES = frozenset({"Release", "InRelease", "Release.gpg"})
PACKAGES_NAMES = frozenset(f"Packages{suffix}" for suffix in MEDIA_TYPES)
UPLOADED_TRUSTED = KEEP_MS / 2000
"""Seconds a blob this worker put stays known to be there (no publication's blob is
deleted before :data:`~pkgcat.storage.publications.KEEP_MS` after it was last named)."""


def published_name(name: str) -> bool:
    """Whether a path under /repo/ is one a publication holds: a repository's Release,
    InRelease, Release.gpg, Packages files and by-hash files."""
    prefix, _, base = name.rpartition("/")
    if "/by-hash/" in f"/{name}":
        return not name.startswith("depictions/")
    if base not in SIGNED_NAMES and base not in PACKAGES_NAMES:
        return False
    return prefix == "" or (prefix.startswith("sources/") and prefix.count("/") == 1)


@dataclasses.dataclass(slots=True)
class Adopted:
    """The publication a worker serves: its number and its files by path."""

    number: int
    generation: int
    """The catalogue generation it was built from."""
    files: dict[str, IndexFile]
    bodies: dict[str, IndexFile]
    """Its Packages files by SHA-256."""


class ServedRepository:
    """The index set, the blob store and the download grants of one worker."""

    def __init__(
        self,
        settings: Settings,
        blobs: BlobStore,
        generation: Callable[[], Awaitable[int]],
        engine: Callable[[], Engine],
        *,
        clock: Callable[[], float] = time.time,
        published: BlobStore | None = None,
    ) -> None:
        """``generation``: the catalogue generation as the database holds it now; ``engine``:
        the worker's engine, made at its first use (the caller disposes of it);
        ``published``: the store of the published index files (shared by every host),
        by default ``blobs``."""
        self.blobs = blobs
        self.published = blobs if published is None else published
        passphrase = settings.repository_passphrase
        self._passphrase = None if passphrase is None else passphrase.get_secret_value()
        self._signers = Signers(self._passphrase)
        address = settings.repository_url
        self._identity = Identity(
            label=settings.repository_label,
            valid_seconds=settings.repository_valid_seconds,
            depictions=None if address is None else f"{address}depictions/",
            media=None if address is None else f"{address}media/",
            store_name=settings.store_name if settings.store_url is not None else None,
        )
        self._made_from = hashlib.sha256(repr(self._identity).encode()).hexdigest()
        self._lifetime = settings.download_url_seconds
        self._deadline = settings.request_deadline
        index_dir = settings.index_dir
        self.directory = IndexDirectory(
            Path(index_dir) if index_dir else default_blob_dir(settings.database_url, "indexes")
        )
        self._generation = generation
        self._clock = clock
        self._engine = engine
        self._owner = f"{os.getpid()}-{secrets.token_hex(8)}"
        self._local: IndexSet | None = None
        """This worker's own build (its depictions and pool are served)."""
        self._set: IndexSet | None = None
        """What is served: the local build's files with the adopted publication's."""
        self._adopted: Adopted | None = None
        self._published: IndexSet | None = None
        """The local build this worker published last."""
        self._uploaded: dict[str, float] = {}
        """Blobs this worker put, with when."""
        self._building = asyncio.Lock()
        self._adopting = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._grants: Grants | None = None
        self._unsigned_told = False
        self._failing = False
        self._asked = False
        self.outage = Outage(
            "repository indexes cannot be built or read",
            "repository indexes are built and read again",
            indexes_log,
        )

    def engine(self) -> Engine:
        """The worker's engine (:class:`pkgcat.storage.backends.WriteEngine`)."""
        return self._engine()

    def period(self, now: float) -> int:
        """The start of the current Valid-Until period (half the validity), or 0 without one."""
        half = self._identity.valid_seconds // 2
        return int(now) // half * half if half else 0

    def start(self) -> None:
        """Start the worker's background task (at its start; else at its first request)."""
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())

    async def current(self) -> IndexSet:
        """The index set to serve now; the first one waited for."""
        self.start()
        served = self._set
        if served is not None and self._asked:
            return served
        # A worker's first request sees every change made before it (as the first
        # publication it waits for, when it has none yet).
        self._asked = True
        try:
            async with asyncio.timeout(FIRST_SECONDS):
                while True:
                    try:
                        await self._step()
                    except Exception:
                        if self._set is None:
                            raise
                        return self._set  # the background task tells of the failure
                    if self._set is not None and self._caught_up():
                        return self._set
                    await asyncio.sleep(POLL_SECONDS / 10)  # another worker is publishing
        except TimeoutError:
            if self._set is None:
                raise
            return self._set  # the publisher is slow: what it published last

    def _caught_up(self) -> bool:
        """Whether the publication served is of the local build (or of a newer one)."""
        local, adopted = self._local, self._adopted
        return local is not None and adopted is not None and adopted.generation >= local.generation

    async def newest(self) -> IndexSet:
        """The index set with the newest publication: never older than any worker served.

        While the database cannot be reached, the one held (the outage told once)."""
        served = await self.current()
        if self.outage.failing:
            return served
        try:
            # Bounded: a database that does not answer is an outage, not a request held.
            async with asyncio.timeout(self._deadline):
                number = await asyncio.shield(
                    anyio.to_thread.run_sync(newest_number, self.engine())
                )
                if self._adopted is None or number > self._adopted.number:
                    await asyncio.shield(self._adopt())
        except Exception as error:
            if not self._unavailable(error):
                raise
            self.outage.failed(type(error).__name__)
        return self._set or served

    async def by_hash(self, name: str) -> tuple[Named, AsyncIterator[bytes]] | None:
        """A by-hash file (``by-hash/SHA256/<hex>``, under any repository) published lately
        and not held here, from the blob store; None when no publication named it."""
        _, _, rest = name.rpartition("by-hash/")
        found = await anyio.to_thread.run_sync(by_hash, self.engine(), rest)
        if found is None:
            return None
        return found, self.published.read(found.sha256)

    @staticmethod
    def _unavailable(error: Exception) -> bool:
        return database_unavailable(error) or isinstance(error, (BlobsUnavailable, TimeoutError))

    async def _run(self) -> None:
        while True:
            try:
                await self._step()
            except Exception as error:
                if self._unavailable(error):
                    self.outage.failed(type(error).__name__)
                elif not self._failing:
                    self._failing = True
                    indexes_log.exception(
                        "rebuilding the repository's indexes failed; the previous ones are served"
                    )
            else:
                self._failing = False
                self.outage.worked()
            await asyncio.sleep(POLL_SECONDS)

    async def _step(self) -> None:
        async with self._building:
            await self._refresh()
            if await anyio.to_thread.run_sync(hold, self.engine(), self._owner, LEASE_MS):
                await self._publish()
        await self._adopt()

    async def _refresh(self) -> None:
        generation = await self._generation()
        period = self.period(self._clock())
        served = self._local
        # A sale that starts or ends changes prices and depictions with no write to tell of it.
        due = served is not None and served.changes_at is not None
        if due and served is not None and served.changes_at is not None:
            due = served.changes_at <= self._clock()
        if (
            served is not None
            and served.generation == generation
            and served.period == period
            and not due
        ):
            return
        started = time.monotonic()
        # Its by-hash files are not served (the publication's are): none carried over.
        built = await anyio.to_thread.run_sync(self._build, period, served)
        self._local = built
        log.debug(
            "repository indexes built for generation %d in %.3f s (%d files)",
            built.generation,
            time.monotonic() - started,
            len(built.pool),
        )

    async def _publish(self) -> None:
        """Publish the local build, when the newest publication is of another one."""
        local = self._local
        assert local is not None
        last = await anyio.to_thread.run_sync(partial(newest, self.engine(), 0, files=False))
        if (
            last is not None
            and (last.generation, last.period, last.made_from)
            == (local.generation, local.period, self._made_from)
            and (self._published is None or self._published is local)
        ):
            return
        signed, indexes, named = _contents(local)
        bodies = {made[0]: local.files[path] for path, made in indexes.items()}
        now = time.monotonic()
        for sha256, index in bodies.items():
            if now - self._uploaded.get(sha256, float("-inf")) < UPLOADED_TRUSTED:
                continue
            await self._put(sha256, index.body)
            self._uploaded[sha256] = now
        files = zlib.compress(orjson.dumps({"signed": signed, "indexes": indexes}))
        fields = {
            "generation": local.generation,
            "period": local.period,
            "made_from": self._made_from,
            "files": files,
        }
        number, forgotten = await anyio.to_thread.run_sync(
            publish, self.engine(), self._owner, fields, named
        )
        if number is None:
            return
        self._published = local
        indexes_log.debug(
            "repository indexes published as number %d (generation %d)", number, local.generation
        )
        for sha256 in forgotten:
            self._uploaded.pop(sha256, None)
            with contextlib.suppress(FileNotFoundError, BlobsUnavailable):
                await self.published.delete(sha256)

    async def _put(self, sha256: str, body: bytes) -> None:
        def written() -> Path:
            self.directory.root.mkdir(parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(prefix=".publishing-", dir=self.directory.root)
            with os.fdopen(handle, "wb") as out:
                out.write(body)
            return Path(name)

        path = await anyio.to_thread.run_sync(written)
        try:
            await self.published.put(path, sha256)
        finally:
            path.unlink(missing_ok=True)

    async def _adopt(self) -> None:
        """Serve the newest publication (and the local build's other files) when either is
        newer than what is served."""
        async with self._adopting:
            local, adopted = self._local, self._adopted
            if local is None:
                return
            found = await anyio.to_thread.run_sync(
                newest, self.engine(), 0 if adopted is None else adopted.number
            )
            if found is not None:
                adopted = await self._read(found, local, adopted)
            if adopted is None:
                return  # nothing published yet
            served = self._set
            if served is not None and found is None and served.pool is local.pool:
                return  # nothing new
            merged = IndexSet(
                local.generation,
                local.period,
                signed=local.signed,
                pool=local.pool,
                media=local.media,
                changes_at=local.changes_at,
            )
            merged.files = {
                name: index for name, index in local.files.items() if not published_name(name)
            }
            # The by-hash files of publications before are read from the store when asked
            # for (:meth:`by_hash`): none kept in memory.
            merged.files |= adopted.files
            try:
                await anyio.to_thread.run_sync(self.directory.place, merged, served)
            except OSError:
                log.exception(
                    "the repository's indexes could not be written to %s; they are sent from "
                    "memory",
                    self.directory.root,
                )
            self._adopted, self._set = adopted, merged

    async def _read(self, found: Publication, local: IndexSet, before: Adopted | None) -> Adopted:
        """A publication's files, each Packages file taken from the local build or the one
        served when it holds the same bytes, else read from the blob store."""
        contents = orjson.loads(zlib.decompress(found.files))
        held: dict[str, IndexFile] = {} if before is None else dict(before.bodies)
        for name, index in local.files.items():
            if "by-hash/SHA256/" in name:
                held.setdefault(name.rpartition("/")[2], index)
        files: dict[str, IndexFile] = {}
        bodies: dict[str, IndexFile] = {}
        for name, (media, since, body) in contents["signed"].items():
            data = base64.b64decode(body)
            files[name] = IndexFile(data, media, entity_tag(data), _when(since))
        for name, (sha256, media, since, _size, digests) in contents["indexes"].items():
            known = held.get(sha256)
            if known is None:
                data = b"".join([chunk async for chunk in self.published.read(sha256)])
                known = IndexFile(data, media, entity_tag(data), _when(since))
            held[sha256] = bodies[sha256] = known
            modified = _when(since)
            files[name] = IndexFile(known.body, media, known.etag, modified, path=known.path)
            prefix = name.rpartition("/")[0]
            prefix = f"{prefix}/" if prefix else ""
            for field_name, digest in digests.items():
                files[f"{prefix}by-hash/{field_name}/{digest}"] = IndexFile(
                    known.body, media, known.etag, modified, immutable=True, path=known.path
                )
        return Adopted(found.number, found.generation, files, bodies)

    def _build(self, period: int, previous: IndexSet | None) -> IndexSet:
        engine = self.engine()
        snapshot = read_served(engine, int(self._clock()))
        keys = self._signers.current(engine)
        if not keys and not self._unsigned_told:
            self._unsigned_told = True
            log.warning(
                "the repository is served unsigned: %s",
                "PKGCAT_REPOSITORY_PASSPHRASE is not set"
                if self._passphrase is None
                else "it has no signing key (pkgcat repo key create)",
            )

        def sign(release: bytes) -> tuple[bytes, bytes]:
            return clearsign(keys, release), detach_sign(keys, release)

        built = build(
            snapshot,
            self._identity,
            sign if keys else None,
            period=period,
            previous=previous,
            now=int(self._clock()),
        )
        if keys:
            public = b"".join(bytes(key.extract_certificate()) for key in keys)
            armored = pgp.armor(public, pgp.ArmorKind.PublicKey).encode()
            modified = built.files["Release"].modified
            built.files["key.asc"] = IndexFile(
                armored, "application/pgp-keys", entity_tag(armored), modified
            )
        return built

    async def grants(self) -> Grants | None:
        """The maker and checker of download URLs; None without a passphrase (none can be made)."""
        if self._grants is None:
            try:
                key = await anyio.to_thread.run_sync(download_key, self.engine(), self._passphrase)
            except NoPassphrase:
                return None
            self._grants = Grants(key, self._lifetime)
        return self._grants

    async def download_url(self, path: str) -> str:
        """A signed, single-use URL (path and query) of the file at ``path`` (``/repo/pool/...``).

        The seam the payment flow will use once a buyer is known to own the package.
        """
        grants = await self.grants()
        if grants is None:
            raise NoPassphrase
        return grants.make(path, int(self._clock()))

    async def claim(self, grants: Grants, grant: Grant, client: str, agent: str) -> str:
        """Claim a checked grant for ``client`` with ``agent``: ``"first"``, ``"again"`` (the
        same client resuming its download) or ``"spent"`` (see :func:`claim_grant`)."""
        now = int(self._clock())
        claim, done = grants.claim_id(grant, client, agent), grants.done_id(grant)
        return await anyio.to_thread.run_sync(
            claim_grant, self.engine(), grant.grant_id, claim, done, grant.expires_at, now
        )

    async def peek(self, grants: Grants, grant: Grant, client: str, agent: str) -> str:
        """What :meth:`claim` would answer, claiming nothing (a ``HEAD``)."""
        claim, done = grants.claim_id(grant, client, agent), grants.done_id(grant)
        return await anyio.to_thread.run_sync(
            peek_grant, self.engine(), grant.grant_id, claim, done
        )

    async def finish(self, grants: Grants, grant: Grant) -> bool:
        """Mark the grant's file as gone out whole; False when another request did first."""
        done = grants.done_id(grant)
        return await anyio.to_thread.run_sync(finish_grant, self.engine(), done, grant.expires_at)

    async def unfinish(self, grants: Grants, grant: Grant) -> None:
        """Take :meth:`finish` back: that download was not counted, or not sent."""
        done = grants.done_id(grant)
        await anyio.to_thread.run_sync(unfinish_grant, self.engine(), done)

    def now(self) -> int:
        return int(self._clock())

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):  # stopping: moot
                await self._task
        with contextlib.suppress(Exception):  # stopping: the lease lapses by itself anyway
            await anyio.to_thread.run_sync(let_go, self.engine(), self._owner)
        await self.blobs.close()
        if self.published is not self.blobs:
            await self.published.close()


def _when(since: int) -> datetime:
    return datetime.fromtimestamp(since, UTC)


Signed = dict[str, tuple[str, int, str]]
Indexes = dict[str, tuple[str, str, int, int, dict[str, str]]]


def _contents(built: IndexSet) -> tuple[Signed, Indexes, list[Named]]:
    """What a publication of ``built`` holds: its signed files whole (media type, time,
    base64 bytes), its Packages files by SHA-256 (with media type, time, size and every
    digest its Release lists), and the by-hash names of the latter."""
    digests: dict[str, dict[str, str]] = {}
    for name, index in built.files.items():
        if index.immutable and name not in built.carried and "by-hash/" in name:
            field_name, _, digest = name.rpartition("by-hash/")[2].partition("/")
            digests.setdefault(index.etag, {})[field_name] = digest
    signed: Signed = {}
    indexes: Indexes = {}
    named: dict[str, Named] = {}
    for name, index in built.files.items():
        if not published_name(name) or "by-hash/" in name:
            continue
        if name.rpartition("/")[2] in SIGNED_NAMES:
            body = base64.b64encode(index.body).decode()
            signed[name] = (index.media_type, index.since, body)
            continue
        known = digests[index.etag]
        sha256 = known["SHA256"]
        indexes[name] = (sha256, index.media_type, index.since, len(index.body), known)
        for field_name, _ in HASHES:
            digest = f"{field_name}/{known[field_name]}"
            named[digest] = Named(digest, sha256, len(index.body), index.media_type)
    return signed, indexes, list(named.values())
