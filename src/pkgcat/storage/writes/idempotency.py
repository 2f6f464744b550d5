"""The writes sent with an ``Idempotency-Key`` (migration 0007): the key claimed before the
work, and the answer kept for its retries.

One row per application and key: the operation, the SHA-256 of what was sent,
the answer's status and body, and when the row expires. A request **claims**
its key before it does anything: it inserts the row in progress (status
:data:`IN_PROGRESS`, an empty body, expiring after the claim's bound). The
table's primary key (application_id, idempotency_key) decides a race, on SQLite
and PostgreSQL alike: one insert wins, and every other request of that key
reads the winner's row instead (in progress, or its answer). The winner does
the work and **completes** the row with the answer and its keeping time, or
**releases** it (deletes it) when the work failed on the server's side, so that
a retry may do it. A claim whose request died with its process is never
completed: it expires after its bound, and the next request of the key takes
it over. Expired rows are deleted as keys are claimed and answers kept, and are
never answered from.

As Stripe's idempotent requests: the key is saved once the work begins, a
request that meets the key still in progress is told to retry (409), and one
with other parameters is refused (https://docs.stripe.com/api/idempotent_requests).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from sqlalchemy import ColumnElement, Engine, and_, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from pkgcat.storage import schema as t
from pkgcat.storage.engine import write_transaction

IN_PROGRESS = 0
"""The status of a claimed row whose work has not answered yet (no HTTP status is 0)."""
_CLAIMS = 3
"""Inserts tried: a row seen in the way may be released or expire before it is read."""


@dataclass(frozen=True, slots=True)
class Kept:
    """What a key's row holds: an answer kept for its retries, or a claim in progress."""

    operation: str
    request_sha256: str
    status: int
    body: bytes

    @property
    def in_progress(self) -> bool:
        return self.status == IN_PROGRESS


@dataclass(frozen=True, slots=True)
class Claim:
    """A key this request claimed: the row it inserted, which only it completes or releases."""

    application_id: int
    key: str
    operation: str
    request_sha256: str
    claimed_at: int


def _own(claim: Claim) -> ColumnElement[bool]:
    """The claimed row, as long as it is still this claim's (not taken over after its bound).

    ``created_at`` tells two claims apart: a takeover comes at least the bound (a
    second or more) after the claim it takes over."""
    r = t.idempotency_records
    return and_(
        r.c.application_id == claim.application_id,
        r.c.idempotency_key == claim.key,
        r.c.status == IN_PROGRESS,
        r.c.created_at == claim.claimed_at,
        r.c.request_sha256 == claim.request_sha256,
    )


def _live(engine: Engine, application_id: int, key: str, now: int) -> Kept | None:
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


def claim(
    engine: Engine,
    application_id: int,
    key: str,
    operation: str,
    request_sha256: str,
    *,
    now: int,
    bound: int,
) -> Claim | Kept:
    """Claim ``key`` for a request until ``now + bound``: the :class:`Claim` when this request
    is first (or takes over an expired row), else what the key's row holds."""
    r = t.idempotency_records
    mine = r.c.application_id == application_id, r.c.idempotency_key == key
    refused: IntegrityError | None = None
    for _ in range(_CLAIMS):
        try:
            with write_transaction(engine) as db:
                db.execute(delete(r).where(*mine, r.c.expires_at <= now))  # a dead claim's too
                db.execute(
                    insert(r).values(
                        application_id=application_id,
                        idempotency_key=key,
                        operation=operation,
                        request_sha256=request_sha256,
                        status=IN_PROGRESS,
                        body=b"",
                        created_at=now,
                        expires_at=now + bound,
                    )
                )
        except IntegrityError as error:  # the key is another request's: its row stands
            found = _live(engine, application_id, key, now)
            if found is not None:
                return found
            refused = error  # released or expired meanwhile: claim it again
        else:
            return Claim(application_id, key, operation, request_sha256, now)
    assert refused is not None
    raise refused


def complete(engine: Engine, claim: Claim, status: int, body: bytes, *, now: int, ttl: int) -> bool:
    """Keep the claimed work's answer until ``now + ttl``; False when the claim was taken
    over meanwhile (its bound passed), and the row is the other request's."""
    r = t.idempotency_records
    with write_transaction(engine) as db:
        done = db.execute(
            update(r).where(_own(claim)).values(status=status, body=body, expires_at=now + ttl)
        ).rowcount
    with write_transaction(engine) as db:
        db.execute(delete(r).where(r.c.expires_at <= now))
    return bool(done == 1)


def release(engine: Engine, claim: Claim) -> None:
    """Give the key back (its work failed on the server's side): a retry may claim it."""
    with write_transaction(engine) as db:
        db.execute(delete(t.idempotency_records).where(_own(claim)))


Codec = Callable[[bytes], bytes]


class Answers:
    """The kept answers of a worker's writes, on its write engine (synchronous: the HTTP layer
    runs each call in a thread). ``seal`` and ``unseal``: how an answer that holds a secret is
    kept (as the secret itself is) and read back."""

    def __init__(
        self,
        engine: Callable[[], Engine],
        *,
        ttl: int,
        bound: int,
        seal: Codec | None = None,
        unseal: Codec | None = None,
    ) -> None:
        self._engine = engine
        self.ttl = ttl
        self.bound = bound
        self._seal = seal
        self._unseal = unseal

    def claim(
        self, application_id: int, key: str, operation: str, request_sha256: str, now: int
    ) -> Claim | Kept:
        """See :func:`claim`; an answer found is opened when sealed."""
        found = claim(
            self._engine(), application_id, key, operation, request_sha256,
            now=now, bound=self.bound,
        )  # fmt: skip
        if isinstance(found, Kept) and not found.in_progress and self._unseal is not None:
            return replace(found, body=self._unseal(found.body))
        return found

    def complete(self, claim: Claim, status: int, body: bytes, now: int) -> bool:
        kept = body if self._seal is None else self._seal(body)
        return complete(self._engine(), claim, status, kept, now=now, ttl=self.ttl)

    def release(self, claim: Claim) -> None:
        release(self._engine(), claim)
