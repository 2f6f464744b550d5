"""Webhook endpoints and their delivery state, on SQLAlchemy Core (SQLite and PostgreSQL).

The deliverers' side is a claim and a cursor. :meth:`WebhookStore.claim` leases
endpoints that are due and have events past their cursor, no more than the
deliverer's fair share (:mod:`pkgcat.storage.webhook_leases`); on PostgreSQL the
candidates are read ``FOR UPDATE SKIP LOCKED``, so several servers claiming at
once each get others, and on SQLite the claim is one ``BEGIN IMMEDIATE``
transaction (one writer at a time). A lease ends at a time of the database's
clock, renewed by the holder's heartbeats and by each delivery it records: a
deliverer killed mid-send holds its endpoints until then, and the next claim
after it resends what was not recorded as delivered (at least once). Each step
of a lease (:meth:`advance`, :meth:`fail`) writes only while the lease is still
the caller's, so a deliverer that lost its lease writes nothing.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Engine, delete, exists, func, insert, select, text, update
from sqlalchemy.engine import Connection

from pkgcat.storage import schema as t
from pkgcat.storage import webhook_leases as leases
from pkgcat.storage.engine import write_transaction
from pkgcat.storage.rows import PACKAGE_SELECT
from pkgcat.storage.webhook_leases import now_ms
from pkgcat.storage.writes.outbox import take_order

_PACKAGE = text(PACKAGE_SELECT + "WHERE p.package = :package")


@dataclass(frozen=True, slots=True)
class EndpointRecord:
    """An endpoint as stored (its secrets sealed)."""

    pk: int
    endpoint_id: str
    application_id: int
    source_id: int
    url: str
    events: tuple[str, ...]
    enabled: bool
    disabled_reason: str | None
    sealed_secret: str
    sealed_previous: str | None
    previous_until: int | None
    position: int
    attempts: int
    failing_since: int | None
    created_at: int


@dataclass(frozen=True, slots=True)
class StoredEvent:
    seq: int
    event_id: str
    type: str
    source_id: int
    created_at: int
    data: Any
    """The facts as stored (:mod:`pkgcat.storage.writes.outbox`)."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One delivery attempt, as the log keeps it."""

    event_id: str
    attempted_at: int
    ok: bool
    status: int | None
    duration_ms: int
    response: str


@dataclass(frozen=True, slots=True)
class Audience:
    """What an endpoint's bodies are rendered for: its application's shape and zone, its source."""

    shape: str | None
    timezone: str | None
    source_name: str


def _record(row: Any) -> EndpointRecord:
    m = row._mapping
    return EndpointRecord(
        pk=m["id"],
        endpoint_id=m["endpoint_id"],
        application_id=m["application_id"],
        source_id=m["source_id"],
        url=m["url"],
        events=tuple(orjson.loads(m["events"])),
        enabled=bool(m["enabled"]),
        disabled_reason=m["disabled_reason"],
        sealed_secret=m["sealed_secret"],
        sealed_previous=m["sealed_previous"],
        previous_until=m["previous_until"],
        position=m["position"],
        attempts=m["attempts"],
        failing_since=m["failing_since"],
        created_at=m["created_at"],
    )


class WebhookStore:
    """Every SQL statement of webhooks; one short transaction per call."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # Management -----------------------------------------------------------------------------

    def create(
        self,
        *,
        application_id: int,
        url: str,
        events: Sequence[str],
        sealed_secret: str,
        now: int,
    ) -> EndpointRecord:
        """A new endpoint, enabled, hearing the events written from now on."""
        e = t.webhook_endpoints
        with write_transaction(self.engine) as db:
            source_id = db.execute(
                select(t.applications.c.source_id).where(t.applications.c.id == application_id)
            ).scalar_one()
            take_order(db)  # the cursor starts after every event committed, none pending
            position = db.execute(select(func.coalesce(func.max(t.webhook_events.c.seq), 0)))
            pk = db.execute(
                insert(e)
                .values(
                    endpoint_id="we_" + secrets.token_hex(10),
                    application_id=application_id,
                    source_id=source_id,
                    url=url,
                    events=orjson.dumps(list(events)).decode(),
                    enabled=True,
                    sealed_secret=sealed_secret,
                    position=position.scalar_one(),
                    next_attempt_ms=0,
                    attempts=0,
                    created_at=now,
                    updated_at=now,
                )
                .returning(e.c.id)
            ).scalar_one()
            return _record(db.execute(select(e).where(e.c.id == pk)).one())

    def find(self, application_id: int, endpoint_id: str) -> EndpointRecord | None:
        e = t.webhook_endpoints
        with self.engine.connect() as db:
            row = db.execute(
                select(e).where(
                    e.c.application_id == application_id, e.c.endpoint_id == endpoint_id
                )
            ).first()
        return None if row is None else _record(row)

    def of_application(self, application_id: int) -> list[EndpointRecord]:
        e = t.webhook_endpoints
        with self.engine.connect() as db:
            rows = db.execute(
                select(e).where(e.c.application_id == application_id).order_by(e.c.id)
            )
            return [_record(row) for row in rows]

    def update(
        self,
        pk: int,
        *,
        now: int,
        url: str | None = None,
        events: Sequence[str] | None = None,
        enabled: bool | None = None,
    ) -> None:
        """Change what is given; enabling an endpoint again clears its failures."""
        values: dict[str, Any] = {"updated_at": now}
        if url is not None:
            values["url"] = url
        if events is not None:
            values["events"] = orjson.dumps(list(events)).decode()
        if enabled is not None:
            values["enabled"] = enabled
            values["disabled_reason"] = None if enabled else "disabled by its application"
            if enabled:
                values |= {"attempts": 0, "failing_since": None, "next_attempt_ms": 0}
        with write_transaction(self.engine) as db:
            db.execute(
                update(t.webhook_endpoints).where(t.webhook_endpoints.c.id == pk).values(values)
            )

    def delete(self, pk: int) -> None:
        """The endpoint and its delivery log."""
        with write_transaction(self.engine) as db:
            db.execute(delete(t.webhook_attempts).where(t.webhook_attempts.c.endpoint_id == pk))
            db.execute(delete(t.webhook_endpoints).where(t.webhook_endpoints.c.id == pk))

    def roll(self, pk: int, *, sealed_secret: str, previous_until: int, now: int) -> None:
        """A new secret; the current one becomes the previous, signing until ``previous_until``."""
        e = t.webhook_endpoints
        with write_transaction(self.engine) as db:
            db.execute(
                update(e)
                .where(e.c.id == pk)
                .values(
                    sealed_previous=e.c.sealed_secret,
                    previous_until=previous_until,
                    sealed_secret=sealed_secret,
                    updated_at=now,
                )
            )

    def attempts(
        self, pk: int, *, limit: int, before: int | None = None
    ) -> list[tuple[int, Attempt]]:
        """The newest attempts first, ``limit`` of them, older than the attempt ``before``."""
        a = t.webhook_attempts
        query = select(a).where(a.c.endpoint_id == pk)
        if before is not None:
            query = query.where(a.c.id < before)
        with self.engine.connect() as db:
            rows = db.execute(query.order_by(a.c.id.desc()).limit(limit))
            return [
                (
                    row.id,
                    Attempt(
                        row.event_id,
                        row.attempted_at,
                        bool(row.ok),
                        row.status,
                        row.duration_ms,
                        row.response,
                    ),
                )
                for row in rows
            ]

    # Delivery -------------------------------------------------------------------------------

    def claim(self, owner: str, *, lease_ms: int, limit: int, senders: int) -> list[EndpointRecord]:
        """Lease to ``owner`` up to ``limit`` endpoints that are due and have events to send,
        within its fair share for its ``senders`` (:mod:`pkgcat.storage.webhook_leases`)."""
        e = t.webhook_endpoints
        with self.engine.connect() as db:  # a read first: an idle deliverer takes no lock
            take = leases.claimable(db, owner, senders=senders, limit=limit)
        if take <= 0:
            return []
        with write_transaction(self.engine) as db:
            ids = leases.lease(db, owner, lease_ms=lease_ms, limit=take)
            if not ids:
                return []
            return [_record(row) for row in db.execute(select(e).where(e.c.id.in_(ids)))]

    @contextmanager
    def recording(self) -> Iterator[leases.Recorder]:
        """What records a sender's deliveries one by one (:class:`leases.Recorder`)."""
        with leases.recorder(self.engine) as recorder:
            yield recorder

    def beat(self, owner: str, *, host: str, pid: int, senders: int, lease_ms: int) -> None:
        """The deliverer ``owner`` is alive, and its leases renewed (:func:`pkgcat.storage.webhook_leases.beat`)."""
        with self.engine.begin() as db:
            leases.beat(db, owner, host=host, pid=pid, senders=senders, lease_ms=lease_ms)

    def leave(self, owner: str) -> None:
        """The deliverer ``owner`` has stopped (its leases ended already)."""
        with self.engine.begin() as db:
            leases.leave(db, owner)

    def events_after(self, source_id: int, position: int, *, limit: int) -> list[StoredEvent]:
        v = t.webhook_events
        with self.engine.connect() as db:
            rows = db.execute(
                select(v)
                .where(v.c.source_id == source_id, v.c.seq > position)
                .order_by(v.c.seq)
                .limit(limit)
            )
            return [
                StoredEvent(
                    row.seq,
                    row.event_id,
                    row.type,
                    row.source_id,
                    row.created_at,
                    orjson.loads(row.data),
                )
                for row in rows
            ]

    def event(self, event_id: str) -> StoredEvent | None:
        v = t.webhook_events
        with self.engine.connect() as db:
            row = db.execute(select(v).where(v.c.event_id == event_id)).first()
        if row is None:
            return None
        return StoredEvent(
            row.seq, row.event_id, row.type, row.source_id, row.created_at, orjson.loads(row.data)
        )

    def log(self, pk: int, attempt: Attempt) -> None:
        """Log an attempt made outside a lease (a test event, a redelivery)."""
        with self.engine.begin() as db:
            self._log(db, pk, [attempt])

    def audience(self, application_id: int) -> Audience:
        a, s = t.applications, t.sources
        with self.engine.connect() as db:
            row = db.execute(
                select(a.c.shape, a.c.timezone, s.c.name)
                .join(s, s.c.id == a.c.source_id)
                .where(a.c.id == application_id)
            ).one()
        return Audience(row[0], row[1], row[2])

    def package_row(self, package: str) -> Any:
        """The package's row as the request path reads it (:func:`pkgcat.storage.rows.package`)."""
        with self.engine.connect() as db:
            row = db.execute(_PACKAGE, {"package": package}).first()
        return None if row is None else row._mapping

    def _held(self, db: Connection, pk: int, owner: str, values: dict[str, Any]) -> bool:
        e = t.webhook_endpoints
        done = db.execute(update(e).where(e.c.id == pk, e.c.lease_owner == owner).values(values))
        return bool(done.rowcount)

    def _log(self, db: Connection, pk: int, attempts: Sequence[Attempt]) -> None:
        if attempts:
            db.execute(
                insert(t.webhook_attempts),
                [
                    {
                        "endpoint_id": pk,
                        "event_id": a.event_id,
                        "attempted_at": a.attempted_at,
                        "ok": a.ok,
                        "status": a.status,
                        "duration_ms": a.duration_ms,
                        "response": a.response,
                    }
                    for a in attempts
                ],
            )

    def advance(
        self,
        pk: int,
        owner: str,
        *,
        position: int,
        delivered: Sequence[Attempt],
        lease_ms: int | None,
    ) -> bool:
        """Record deliveries and move the cursor to ``position``; False if the lease was lost.

        ``lease_ms``: the lease renewed for that long from now, or ended (None). Any
        delivery ends a run of failures.
        """
        values: dict[str, Any] = {"position": position}
        if delivered:
            values |= {"attempts": 0, "failing_since": None}
        with self.engine.begin() as db:
            leases.unflushed(db)
            if lease_ms is None:
                values |= {"lease_owner": None, "lease_until_ms": None}
            else:
                values["lease_until_ms"] = now_ms(db) + lease_ms
            if not self._held(db, pk, owner, values):
                return False
            self._log(db, pk, delivered)
            return True

    def fail(
        self,
        pk: int,
        owner: str,
        *,
        attempts: Sequence[Attempt],
        position: int,
        failures: int,
        failing_since: int,
        retry_in_ms: int,
        disable_reason: str | None,
    ) -> None:
        """Record ``attempts`` (the last one failed), the run of failures and the next attempt,
        ``retry_in_ms`` from now (or the endpoint disabled); the lease ends."""
        values: dict[str, Any] = {
            "position": position,
            "attempts": failures,
            "failing_since": failing_since,
            "lease_owner": None,
            "lease_until_ms": None,
        }
        if disable_reason is not None:
            values |= {"enabled": False, "disabled_reason": disable_reason}
        with self.engine.begin() as db:
            values["next_attempt_ms"] = now_ms(db) + retry_in_ms
            if self._held(db, pk, owner, values):
                self._log(db, pk, attempts)

    def prune(self, *, before: int) -> tuple[int, int]:
        """Delete events written before ``before`` that every endpoint of their source has
        passed (a disabled endpoint's cursor holds its events back), and attempts logged
        before it; how many of each."""
        e, v, a = t.webhook_endpoints, t.webhook_events, t.webhook_attempts
        held = select(e.c.id).where(e.c.source_id == v.c.source_id, e.c.position < v.c.seq)
        with self.engine.begin() as db:
            events = db.execute(delete(v).where(v.c.created_at < before, ~exists(held)))
            attempts = db.execute(delete(a).where(a.c.attempted_at < before))
        return int(events.rowcount), int(attempts.rowcount)

    def counts(self) -> tuple[int, int, int]:
        """Disabled endpoints, events in the outbox, and events some enabled endpoint has yet to pass."""
        e, v = t.webhook_endpoints, t.webhook_events
        with self.engine.connect() as db:
            disabled = db.execute(
                select(func.count()).select_from(e).where(e.c.enabled.is_(False))
            ).scalar_one()
            total = db.execute(select(func.count()).select_from(v)).scalar_one()
            behind = (
                select(func.min(e.c.position))
                .where(e.c.enabled.is_(True), e.c.source_id == v.c.source_id)
                .scalar_subquery()
            )
            pending = db.execute(
                select(func.count()).select_from(v).where(v.c.seq > behind)
            ).scalar_one()
        return int(disabled), int(total), int(pending)
