"""Uploads through the API: :func:`~pkgcat.repository.publish.publish` for a caller's source,
and the answers kept for retries under an ``Idempotency-Key`` (:class:`Answers`).

The request path of the server reads through its own drivers (see
:mod:`pkgcat.storage.sqlite`, :mod:`pkgcat.storage.postgres`); an upload is
rare and slow beside a read, so it writes as ``pkgcat publish`` does, in a thread, through
the worker's SQLAlchemy engine (:class:`pkgcat.storage.backends.WriteEngine`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
from sqlalchemy import Engine

from pkgcat.config import Settings
from pkgcat.repository.debs import DebLimits, Refused
from pkgcat.repository.publish import Published, publish
from pkgcat.storage.blobs import BlobStore
from pkgcat.storage.writes.idempotency import Answers
from pkgcat.storage.writes.published import source_name
from pkgcat.versions import Preference


class Uploads:
    """A worker's uploads: the blob store it shares with the served repository, the engine."""

    def __init__(self, settings: Settings, blobs: BlobStore, engine: Callable[[], Engine]) -> None:
        """``engine``: the worker's engine, made at its first use (the caller disposes of it)."""
        self.limits = DebLimits.from_settings(settings)
        self.max_bytes = self.limits.file_bytes
        self.answers = Answers(
            engine, ttl=settings.idempotency_seconds, bound=settings.idempotency_claim_seconds
        )
        self._preference = Preference(settings.architecture_preference)
        self._blobs = blobs
        self.engine = engine

    async def publish(self, path: Path, source_id: int) -> Published:
        """Publish the .deb at ``path`` to the source; :class:`Refused` (nothing stored) when unfit."""
        engine = self.engine()
        source = await anyio.to_thread.run_sync(source_name, engine, source_id)
        if source is None:
            raise Refused("the caller's source no longer exists")
        return await publish(
            engine,
            self._blobs,
            path,
            source,
            limits=self.limits,
            preference=self._preference,
        )
