"""The claims of ``Idempotency-Key`` rows (storage/writes/idempotency.py), on SQLite and PostgreSQL.

Threads claim one key at once through one engine, as a worker's requests do; the
primary key decides. A claim is completed or released only by its own request,
and one past its bound is taken over.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import select

from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.writes.idempotency import Claim, Kept, claim, complete, release

APP = 1  # alpha-a of the test catalogue
NOW = 1_800_000_000
BOUND = 300
TTL = 86_400


def rows(admin: CatalogueAdmin) -> list[tuple[str, int, int]]:
    r = t.idempotency_records
    with admin.engine.connect() as db:
        found = db.execute(select(r.c.idempotency_key, r.c.status, r.c.expires_at)).all()
    return [tuple(row) for row in found]


def test_of_twelve_threads_claiming_one_key_one_wins(
    admin: CatalogueAdmin, catalogue: dict[str, str]
) -> None:
    start = threading.Barrier(12)

    def one(_: int) -> Claim | Kept:
        start.wait(timeout=30)
        return claim(admin.engine, APP, "k", "package/upload", "a" * 64, now=NOW, bound=BOUND)

    with ThreadPoolExecutor(12) as pool:
        found = list(pool.map(one, range(12)))
    claims = [f for f in found if isinstance(f, Claim)]
    assert len(claims) == 1
    assert [f for f in found if isinstance(f, Kept)] == [
        Kept("package/upload", "a" * 64, 0, b"")
    ] * 11
    assert rows(admin) == [("k", 0, NOW + BOUND)]


def test_a_completed_claim_answers_and_a_released_one_is_free_again(
    admin: CatalogueAdmin, catalogue: dict[str, str]
) -> None:
    first = claim(admin.engine, APP, "done", "webhook/create", "b" * 64, now=NOW, bound=BOUND)
    assert isinstance(first, Claim)
    assert complete(admin.engine, first, 200, b'{"code":0}', now=NOW + 1, ttl=TTL)
    again = claim(admin.engine, APP, "done", "webhook/create", "b" * 64, now=NOW + 2, bound=BOUND)
    assert again == Kept("webhook/create", "b" * 64, 200, b'{"code":0}')
    assert rows(admin) == [("done", 200, NOW + 1 + TTL)]
    failed = claim(admin.engine, APP, "failed", "webhook/create", "c" * 64, now=NOW, bound=BOUND)
    assert isinstance(failed, Claim)
    release(admin.engine, failed)
    retried = claim(admin.engine, APP, "failed", "webhook/create", "c" * 64, now=NOW, bound=BOUND)
    assert isinstance(retried, Claim)
    # The keys are each application's own.
    theirs = claim(admin.engine, 2, "done", "webhook/create", "d" * 64, now=NOW, bound=BOUND)
    assert isinstance(theirs, Claim)


def test_a_claim_past_its_bound_is_taken_over_and_its_late_answer_not_kept(
    admin: CatalogueAdmin, catalogue: dict[str, str]
) -> None:
    """A request whose process died never completes: after the bound, the key is free."""
    dead = claim(admin.engine, APP, "k", "package/upload", "e" * 64, now=NOW, bound=BOUND)
    assert isinstance(dead, Claim)
    late = NOW + BOUND - 1
    held = claim(admin.engine, APP, "k", "package/upload", "e" * 64, now=late, bound=BOUND)
    assert held == Kept("package/upload", "e" * 64, 0, b"")
    later = NOW + BOUND
    taken = claim(admin.engine, APP, "k", "package/upload", "e" * 64, now=later, bound=BOUND)
    assert isinstance(taken, Claim)
    # The first request, not dead after all, answers late: the row is the new claim's.
    assert not complete(admin.engine, dead, 200, b"first", now=later, ttl=TTL)
    release(admin.engine, dead)
    assert rows(admin) == [("k", 0, later + BOUND)]
    assert complete(admin.engine, taken, 200, b"second", now=later + 1, ttl=TTL)
    assert rows(admin) == [("k", 200, later + 1 + TTL)]


def test_keeping_an_answer_deletes_the_expired_rows(
    admin: CatalogueAdmin, catalogue: dict[str, str]
) -> None:
    old = claim(admin.engine, APP, "old", "package/upload", "f" * 64, now=NOW, bound=BOUND)
    assert isinstance(old, Claim)
    assert complete(admin.engine, old, 200, b"old", now=NOW, ttl=TTL)
    new = claim(admin.engine, APP, "new", "package/upload", "f" * 64, now=NOW + TTL, bound=BOUND)
    assert isinstance(new, Claim)
    assert complete(admin.engine, new, 200, b"new", now=NOW + TTL, ttl=TTL)
    assert rows(admin) == [("new", 200, NOW + 2 * TTL)]
