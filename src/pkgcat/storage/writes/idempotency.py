"""The answers kept for writes retried with an ``Idempotency-Key`` (migration 0007).

One row per application and key: the operation, the SHA-256 of what was sent,
the answer's status and body, and when the row expires. A retry with the same
key reads the row; the first answer is written once (a second writer with the
same key keeps the first row, and reads it). Expired rows are deleted as new
ones are written, and are never answered from.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, delete, insert, select
from sqlalchemy.exc import IntegrityError

from pkgcat.storage import schema as t
from pkgcat.storage.engine import write_transaction


@dataclass(frozen=True, slots=True)
class Kept:
    """A write's answer, kept for its retries."""

    operation: str
    request_sha256: str
    status: int
    body: bytes


def recall(engine: Engine, application_id: int, key: str, now: int) -> Kept | None:
    """The live answer kept under ``key`` for the application, if any."""
    r = t.idempotency_records
    with engine.connect() as db:
        row = db.execute(
            select(r.c.operation, r.c.request_sha256, r.c.status, r.c.body).where(
                r.c.application_id == application_id,
                r.c.idempotency_key == key,
                r.c.expires_at > now,
            )
        ).first()
    return None if row is None else Kept(row.operation, row.request_sha256, row.status, row.body)


def keep(engine: Engine, application_id: int, key: str, kept: Kept, *, now: int, ttl: int) -> Kept:
    """Keep ``kept`` under ``key`` until ``now + ttl``; what is kept there (the first answer wins)."""
    r = t.idempotency_records
    try:
        with write_transaction(engine) as db:
            db.execute(delete(r).where(r.c.expires_at <= now))
            db.execute(
                insert(r).values(
                    application_id=application_id,
                    idempotency_key=key,
                    operation=kept.operation,
                    request_sha256=kept.request_sha256,
                    status=kept.status,
                    body=kept.body,
                    created_at=now,
                    expires_at=now + ttl,
                )
            )
    except IntegrityError:  # another request with the same key was first: its answer stands
        first = recall(engine, application_id, key, now)
        if first is not None:
            return first
        raise
    return kept
