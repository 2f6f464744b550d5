"""One worker's copy of the served repository: its index set, rebuilt off the request path.

A request takes the set that is there (:meth:`ServedRepository.current`) and
never waits for a rebuild, except the very first one of a worker, when there is
nothing to serve yet. At most once a second, a request also starts a check in
the background: when the catalogue generation has moved (any publish, any
change to an online flag or a signing key moves it, see migration 0006) or a
Valid-Until period has begun, a new set is built in a thread from one snapshot
and then swapped in whole; until then the previous set is served. The previous
set's by-hash files stay served beside the new ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pysequoia as pgp
from sqlalchemy import Engine

from pkgcat.config import Settings
from pkgcat.repository.grants import Grant, Grants
from pkgcat.repository.indexes import (
    Identity,
    IndexFile,
    IndexSet,
    build,
    carry_by_hash,
    entity_tag,
)
from pkgcat.repository.keys import NoPassphrase, Signers, clearsign, detach_sign, download_key
from pkgcat.repository.ondisk import IndexDirectory
from pkgcat.storage.blobs import BlobStore, default_blob_dir
from pkgcat.storage.served import (
    claim_grant,
    finish_grant,
    peek_grant,
    read_served,
    unfinish_grant,
)

log = logging.getLogger("pkgcat.repository")

CHECK_SECONDS = 1.0
"""How often a worker looks for a change to rebuild from, at most."""


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
    ) -> None:
        """``generation``: the catalogue generation as the database holds it now; ``engine``:
        the worker's engine, made at its first use (the caller disposes of it)."""
        self.blobs = blobs
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
        self._lifetime = settings.download_url_seconds
        index_dir = settings.index_dir
        self.directory = IndexDirectory(
            Path(index_dir) if index_dir else default_blob_dir(settings.database_url, "indexes")
        )
        self._generation = generation
        self._clock = clock
        self._engine = engine
        self._set: IndexSet | None = None
        self._task: asyncio.Task[None] | None = None
        self._checked = float("-inf")
        self._grants: Grants | None = None
        self._unsigned_told = False

    def engine(self) -> Engine:
        """The worker's engine (:class:`pkgcat.storage.backends.WriteEngine`)."""
        return self._engine()

    def period(self, now: float) -> int:
        """The start of the current Valid-Until period (half the validity), or 0 without one."""
        half = self._identity.valid_seconds // 2
        return int(now) // half * half if half else 0

    async def current(self) -> IndexSet:
        """The index set to serve now; starts a check for a newer one at most once a second."""
        served = self._set
        if served is None:
            if self._task is None or self._task.done():
                self._task = asyncio.ensure_future(self._refresh())
            await asyncio.shield(self._task)  # a failed first build raises here, for this request
            assert self._set is not None
            return self._set
        now = time.monotonic()
        if now - self._checked >= CHECK_SECONDS and (self._task is None or self._task.done()):
            self._checked = now
            self._task = asyncio.ensure_future(self._refresh_logged())
        return served

    async def _refresh_logged(self) -> None:
        try:
            await self._refresh()
        except Exception:
            log.exception(
                "rebuilding the repository's indexes failed; the previous ones are served"
            )

    async def _refresh(self) -> None:
        generation = await self._generation()
        period = self.period(self._clock())
        served = self._set
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
        built = await anyio.to_thread.run_sync(self._build, period, served)
        carry_by_hash(built, served)
        self._set = built
        log.info(
            "repository indexes built for generation %d in %.3f s (%d files)",
            built.generation,
            time.monotonic() - started,
            len(built.pool),
        )

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
        try:
            self.directory.place(built, previous)
        except OSError:
            log.exception(
                "the repository's indexes could not be written to %s; they are sent from memory",
                self.directory.root,
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
        await self.blobs.close()
