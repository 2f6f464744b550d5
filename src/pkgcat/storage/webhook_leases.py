"""The leases of webhook endpoints: claimed by fair shares, kept by heartbeats.

The deliverers are known to the database (migration 0015): alive while their heartbeats
come, each owed a fair share of the endpoints that have work. A claim (:func:`claimable`,
then :func:`lease`) takes endpoints that are due, up to that share with those it holds.

A deliverer's heartbeat (:func:`beat`), every third of its lease, renews its row and
every lease it holds in one transaction; a deliverer killed outright stops beating, so
its row and its leases lapse together, and the others take its endpoints within one
lease. Its share (:func:`share`) is the endpoints with work weighed by its senders among
those of every deliverer alive, rounded up: together the shares cover every endpoint,
and no worker takes them all while others wait idle.

Times are the database's clock (:func:`now_ms`), never a host's: deliverers on hosts
whose clocks differ compare the same leases.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from sqlalchemy import (
    and_,
    case,
    delete,
    exists,
    func,
    insert,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection, Engine

from pkgcat.storage import schema as t

FORGET_MS = 3600 * 1000
"""How long the row of a deliverer that stopped beating stays, for an operator to see."""


def now_ms(db: Connection) -> Any:
    """The database's time in milliseconds, as a SQL expression (one value per statement)."""
    if db.dialect.name == "postgresql":
        return literal_column("CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000 AS BIGINT)")
    # SQLite reads its clock once per statement, to the millisecond.
    return literal_column("CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)")


def unflushed(db: Connection) -> None:
    """Commit this transaction without waiting for PostgreSQL's WAL flush to disk.

    For what the deliverers write as they go (records of deliveries, heartbeats): the commit
    is in PostgreSQL, seen by every other session, before the caller goes on, so a deliverer
    or its host lost loses nothing; a crash of PostgreSQL itself can lose its last fraction
    of a second, and the events whose records it loses are sent again (at least once), as the
    usage counts make the same choice (:mod:`pkgcat.storage.postgres.counter`). Waiting for
    the flush held each delivery for as long as the disk took (docs/benchmarks.md). SQLite's
    ``synchronous=NORMAL`` makes the same choice.
    """
    if db.dialect.name == "postgresql":
        db.exec_driver_sql("SET LOCAL synchronous_commit TO OFF")


def beat(db: Connection, owner: str, *, host: str, pid: int, senders: int, lease_ms: int) -> None:
    """``owner`` alive, and each lease it holds renewed, for ``lease_ms`` from now."""
    d, e = t.webhook_deliverers, t.webhook_endpoints
    unflushed(db)
    until = now_ms(db) + lease_ms
    renewed = db.execute(update(d).where(d.c.owner == owner).values(alive_until_ms=until))
    if not renewed.rowcount:  # its first beat, or its row forgotten after a long silence
        db.execute(
            insert(d).values(
                owner=owner, host=host[:255], pid=pid, senders=senders,
                started_at=int(time.time()), alive_until_ms=until,
            )
        )  # fmt: skip
    db.execute(update(e).where(e.c.lease_owner == owner).values(lease_until_ms=until))
    db.execute(delete(d).where(d.c.alive_until_ms < now_ms(db) - FORGET_MS))


def leave(db: Connection, owner: str) -> None:
    """``owner`` stopped: its share goes to the others at their next claim."""
    d = t.webhook_deliverers
    db.execute(delete(d).where(d.c.owner == owner))


def capacity(db: Connection) -> Any:
    """The senders of every deliverer alive, as a scalar SQL subquery."""
    d = t.webhook_deliverers
    alive = d.c.alive_until_ms >= now_ms(db)
    return select(func.coalesce(func.sum(d.c.senders), 0)).where(alive).scalar_subquery()


def share(work: int, senders: int, alive: int) -> int:
    """The endpoints a deliverer of ``senders`` may hold when ``work`` endpoints have events
    to send and the deliverers alive have ``alive`` senders in all (its own among them, even
    when its heartbeat has not reached the database)."""
    return math.ceil(work * senders / max(alive, senders))


def _work(now: Any) -> Any:
    """An endpoint with events to send now (leased or not)."""
    e, v = t.webhook_endpoints, t.webhook_events
    return and_(
        e.c.enabled.is_(True),
        e.c.next_attempt_ms <= now,
        exists().where(v.c.source_id == e.c.source_id, v.c.seq > e.c.position),
    )


def _free(now: Any) -> Any:
    e = t.webhook_endpoints
    return or_(e.c.lease_until_ms.is_(None), e.c.lease_until_ms < now)


def _count(condition: Any) -> Any:
    """How many rows meet ``condition``, as an aggregate (0 over no row)."""
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


def claimable(db: Connection, owner: str, *, senders: int, limit: int) -> int:
    """How many endpoints ``owner`` may lease now: up to ``limit``, none when none is due,
    and with those it holds no more than its :func:`share` for its ``senders``. A read."""
    e = t.webhook_endpoints
    now = now_ms(db)
    work = _work(now)
    mine = and_(e.c.lease_owner == owner, e.c.lease_until_ms >= now)
    due, busy, held, alive = db.execute(
        select(_count(and_(work, _free(now))), _count(work), _count(and_(work, mine)))
        .add_columns(capacity(db))
        .select_from(e)
    ).one()
    if not due:
        return 0
    return min(limit, int(due), share(int(busy), senders, int(alive)) - int(held))


def lease(db: Connection, owner: str, *, lease_ms: int, limit: int) -> list[int]:
    """Lease up to ``limit`` endpoints that are due to ``owner`` for ``lease_ms``; their ids.

    In the caller's write transaction; on PostgreSQL the candidates are read ``FOR UPDATE
    SKIP LOCKED``, so deliverers claiming at once take different endpoints."""
    e = t.webhook_endpoints
    now = now_ms(db)
    query = select(e.c.id).where(_work(now), _free(now)).order_by(e.c.next_attempt_ms)
    query = query.limit(limit)
    if db.dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    ids = [row[0] for row in db.execute(query)]
    if ids:
        db.execute(
            update(e)
            .where(e.c.id.in_(ids))
            .values(lease_owner=owner, lease_until_ms=now + lease_ms)
        )
    return ids


# A delivery's record, as the driver takes it: the cursor moved, the lease renewed and the
# attempt logged, only while the lease is still the caller's. Each delivery is recorded
# before the next is sent, so this is on the path of every event: built by SQLAlchemy for
# each call it cost 1.0 to 1.4 ms on SQLite, written once for the driver 0.26 to 0.29 ms.
# On PostgreSQL it is one statement committed by itself, without waiting for the disk (see
# unflushed): one round trip, where a transaction of two statements took four.
_RECORD_PG = """
WITH moved AS (
    UPDATE webhook_endpoints
    SET position = %s, attempts = 0, failing_since = NULL,
        lease_until_ms = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000 AS BIGINT) + %s
    WHERE id = %s AND lease_owner = %s
        AND set_config('synchronous_commit', 'off', true) IS NOT NULL
    RETURNING id
)
INSERT INTO webhook_attempts
    (endpoint_id, event_id, attempted_at, ok, status, duration_ms, response)
SELECT id, %s, %s, %s, %s, %s, %s FROM moved
"""
_MOVE_SQLITE = """
UPDATE webhook_endpoints
SET position = ?, attempts = 0, failing_since = NULL,
    lease_until_ms = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + ?
WHERE id = ? AND lease_owner = ?
"""
_LOG_SQLITE = """
INSERT INTO webhook_attempts
    (endpoint_id, event_id, attempted_at, ok, status, duration_ms, response)
VALUES (?, ?, ?, ?, ?, ?, ?)
"""


class Logged(Protocol):
    """An attempt as webhook_attempts keeps it (:class:`pkgcat.storage.webhooks.Attempt`)."""

    @property
    def event_id(self) -> str: ...
    @property
    def attempted_at(self) -> int: ...
    @property
    def ok(self) -> bool: ...
    @property
    def status(self) -> int | None: ...
    @property
    def duration_ms(self) -> int: ...
    @property
    def response(self) -> str: ...


class Recorder:
    """Records one sender's deliveries, one after another, on a connection it keeps: borrowed
    from the pool for each, the connection cost more than the write (0.64 ms against 0.36 ms
    for a statement on one kept, on PostgreSQL under the machine's other load)."""

    def __init__(self, db: Connection) -> None:
        self._db = db
        self._postgres = db.dialect.name == "postgresql"

    def record(self, pk: int, owner: str, *, position: int, lease_ms: int, attempt: Logged) -> bool:
        """Record one delivery and renew the lease for ``lease_ms``; False if the lease is no
        longer ``owner``'s (then nothing is written)."""
        moved = (position, lease_ms, pk, owner)
        a = attempt
        logged = (a.event_id, a.attempted_at, a.ok, a.status, a.duration_ms, a.response)
        if self._postgres:  # in autocommit: the statement is its own transaction
            return bool(self._db.exec_driver_sql(_RECORD_PG, (*moved, *logged)).rowcount)
        with self._db.begin():
            if not self._db.exec_driver_sql(_MOVE_SQLITE, moved).rowcount:
                return False
            self._db.exec_driver_sql(_LOG_SQLITE, (pk, *logged))
            return True


@contextmanager
def recorder(engine: Engine) -> Iterator[Recorder]:
    """A :class:`Recorder` on a connection of ``engine``'s, given back at the end."""
    with engine.connect() as db:
        if db.dialect.name == "postgresql":
            db.execution_options(isolation_level="AUTOCOMMIT")
        yield Recorder(db)
