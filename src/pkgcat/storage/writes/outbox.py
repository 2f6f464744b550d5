"""The outbox: webhook events written in the transaction of the change they tell of.

A write path calls :func:`listening` once, inside its transaction, to learn which
sources have a webhook endpoint, and :func:`emit` with the events of those
sources alone: a source nobody listens to costs one indexed read. The events
commit or roll back with the change, so a rolled-back import emits nothing,
and a path emits only for rows it added or changed, so writing the same rows
again emits nothing new.

Order: deliverers read each source's events by ``seq``, and an endpoint's
cursor moves past what it has seen. On PostgreSQL a sequence number is taken
at insert and seen at commit, so two writers could commit out of order and a
cursor pass the slower one's event. :func:`emit` first takes a transaction-wide
advisory lock, held to the commit: event writers commit one after another, in
``seq`` order. SQLite has one writer at a time already.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Sequence

import orjson
from sqlalchemy import bindparam, insert, select
from sqlalchemy.engine import Connection

from pkgcat.events import SALE_BY_STATUS, Event
from pkgcat.storage import schema as t
from pkgcat.storage.writes.bulk import executemany

_LOCK = 0x706B6763_7768  # "pkgcwh": the advisory lock that serialises event writers
_NAMES = ("event_id", "type", "source_id", "created_at", "data")


def new_event_ids(count: int) -> list[str]:
    """``count`` stable, unique event ids: ``evt_`` and 28 hex digits.

    The time in milliseconds, 32 random bits of the batch, and the event's place in it:
    ids of one batch sort in its order and land at the end of the unique index, so a
    large import appends to it rather than writing all over it as random ids would.
    """
    head = f"evt_{time.time_ns() // 1_000_000:012x}{secrets.token_hex(4)}"
    return [f"{head}{n:08x}" for n in range(count)]


def listening(db: Connection, source_ids: Iterable[int] | None = None) -> frozenset[int]:
    """The sources (among ``source_ids``, or all) with at least one webhook endpoint."""
    e = t.webhook_endpoints
    query = select(e.c.source_id).distinct()
    if source_ids is not None:
        wanted = sorted(set(source_ids))
        if not wanted:
            return frozenset()
        query = query.where(e.c.source_id.in_(wanted))
    return frozenset(row[0] for row in db.execute(query))


def take_order(db: Connection) -> None:
    """Hold, until the transaction ends, the right to add events (see the module's docstring)."""
    if db.dialect.name == "postgresql":
        db.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_LOCK})")


def emit(db: Connection, events: Sequence[Event], *, now: int) -> None:
    """Add ``events`` to the outbox, in the caller's transaction (nothing when there are none).

    Each is stored as its type declares (:mod:`pkgcat.events`): its name, its source, its facts.
    """
    if not events:
        return
    take_order(db)
    rows = [
        (event_id, event.name, event.source_id, now, orjson.dumps(event.facts()).decode())
        for event_id, event in zip(new_event_ids(len(events)), events, strict=True)
    ]
    statement = insert(t.webhook_events).values({n: bindparam(f"p_{n}") for n in _NAMES})
    executemany(db, statement, _NAMES, rows)


def emit_heard(db: Connection, events: Sequence[Event], *, now: int) -> None:
    """Those of ``events`` whose source has a webhook endpoint, in the caller's transaction
    (a source nobody hears writes nothing)."""
    heard = listening(db, {event.source_id for event in events})
    emit(db, [event for event in events if event.source_id in heard], now=now)


def emit_sales(db: Connection, txn_ids: Sequence[str], *, now: int) -> None:
    """The sale event of each of these stored purchases, as its status now is.

    For writers of single purchases (the store's sales and refunds), in their transaction:
    the facts are read back from the rows they have just written.
    """
    p, k = t.purchases, t.packages
    rows = db.execute(
        select(
            p.c.source_id,
            p.c.txn_id,
            k.c.package,
            p.c.allowed_for,
            p.c.nickname,
            p.c.status,
            p.c.total,
            p.c.commission,
            p.c.currency,
            p.c.purchased_at,
            p.c.profile_url,
            p.c.payment_platform,
            p.c.fee,
        )
        .select_from(p.outerjoin(k, k.c.id == p.c.package_id))
        .where(p.c.txn_id.in_(list(txn_ids)))
    ).all()
    heard = listening(db, {row.source_id for row in rows})
    # The columns are named as the event's fields are.
    emit(
        db,
        [SALE_BY_STATUS[row.status](**row._mapping) for row in rows if row.source_id in heard],
        now=now,
    )
