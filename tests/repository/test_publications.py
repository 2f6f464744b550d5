"""The published index sets' rows: the lease, the numbers, and how long a by-hash file stays.

On both databases, through :mod:`pkgcat.storage.publications` itself; the clock of a
publication is the database's, so an hour gone by is written into the rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, update

from pkgcat.storage import schema as t
from pkgcat.storage.engine import engine_for
from pkgcat.storage.publications import (
    KEEP_MS,
    Named,
    by_hash,
    hold,
    newest,
    newest_number,
    publish,
)

LEASE_MS = 5000


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    made = engine_for(database_url)
    yield made
    made.dispose()


def _named(n: int) -> list[Named]:
    sha256 = f"{n:064x}"
    return [
        Named(f"SHA256/{sha256}", sha256, 100 + n, "application/x-xz"),
        Named(f"SHA512/{n:0128x}", sha256, 100 + n, "application/x-xz"),
    ]


def _fields(generation: int) -> dict[str, object]:
    return {"generation": generation, "period": 0, "made_from": "x" * 64, "files": b"{}"}


def _an_hour_ago(engine: Engine) -> None:
    """Every row as if written an hour and a minute earlier."""
    back = KEEP_MS + 60_000
    i, b = t.index_publications, t.index_blobs
    with engine.begin() as db:
        db.execute(update(i).values(made_ms=i.c.made_ms - back))
        db.execute(update(b).values(named_ms=b.c.named_ms - back))


def test_one_worker_holds_the_lease_and_publishes_numbers_in_order(engine: Engine) -> None:
    assert hold(engine, "first", LEASE_MS)
    assert not hold(engine, "second", LEASE_MS)
    assert publish(engine, "second", _fields(1), _named(1)) == (None, [])  # not its lease
    assert publish(engine, "first", _fields(1), _named(1))[0] == 1
    assert publish(engine, "first", _fields(2), _named(2))[0] == 2
    # Built from an older snapshot than one published: not published.
    assert publish(engine, "first", _fields(1), _named(1)) == (None, [])
    assert newest_number(engine) == 2
    found = newest(engine, 0)
    assert found is not None
    assert (found.number, found.generation) == (2, 2)
    assert newest(engine, 2) is None
    assert hold(engine, "first", LEASE_MS)  # renewed


def test_a_by_hash_file_stays_an_hour_after_its_publication_is_superseded(
    engine: Engine,
) -> None:
    assert hold(engine, "first", LEASE_MS)
    publish(engine, "first", _fields(1), _named(1))
    _an_hour_ago(engine)  # a quiet hour: no change published since
    number, forgotten = publish(engine, "first", _fields(2), _named(2))
    assert (number, forgotten) == (2, [])
    # A client that read the first Release just before still finds its files.
    old = by_hash(engine, _named(1)[1].digest)
    assert old is not None
    assert (old.sha256, old.size) == (_named(1)[0].sha256, 101)
    _an_hour_ago(engine)
    number, forgotten = publish(engine, "first", _fields(3), _named(3))
    # The first publication's files were superseded over an hour ago: gone, blobs to delete.
    assert forgotten == [_named(1)[0].sha256]
    assert by_hash(engine, _named(1)[0].digest) is None
    assert by_hash(engine, _named(2)[0].digest) is not None
    assert by_hash(engine, _named(3)[0].digest) is not None
