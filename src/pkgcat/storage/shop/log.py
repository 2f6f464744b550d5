"""What every change of a shop writes beside itself: its history line and its event.

The package is found by its source and id, locked for the change (``FOR UPDATE`` on
PostgreSQL; SQLite's write transaction holds the lock already), so one seller never reads or
changes another's package, and two changes of one package are applied one after the other.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson
from sqlalchemy import desc, select, update
from sqlalchemy.engine import Connection, Engine

from pkgcat.events import ShopEvent
from pkgcat.shop.errors import ShopRefused
from pkgcat.shop.values import HistoryEntry
from pkgcat.storage import schema as t
from pkgcat.storage.writes import outbox


class Owned(NamedTuple):
    """A package of the caller's source, as its row holds it."""

    id: int
    source_id: int
    package: str
    price: str | None
    currency: str
    online: bool
    commercial: bool
    version: str


def owned(db: Connection, source_id: int, package: str, *, lock: bool = True) -> Owned:
    """The source's package ``package``; :class:`ShopRefused` (missing) when it has none."""
    p = t.packages
    query = select(
        p.c.id, p.c.source_id, p.c.package, p.c.price, p.c.currency, p.c.online,
        p.c.commercial, p.c.version,
    ).where(p.c.source_id == source_id, p.c.package == package)  # fmt: skip
    if lock and db.dialect.name == "postgresql":
        query = query.with_for_update(of=p)
    row = db.execute(query).first()
    if row is None:
        raise ShopRefused("package", f"this source has no package {package!r}", "missing")
    return Owned(*row)


def changed(
    db: Connection,
    package: Owned,
    actor: str,
    event: type[ShopEvent],
    facts: dict[str, Any],
    now: int,
) -> None:
    """The change's history line and event, and the package row's stamp (the generation)."""
    h = t.package_history
    db.execute(
        h.insert().values(
            package_id=package.id,
            source_id=package.source_id,
            at=now,
            actor=actor,
            change=event.name,
            facts=orjson.dumps(facts).decode(),
        )
    )
    db.execute(update(t.packages).where(t.packages.c.id == package.id).values(updated_at=now))
    if package.source_id in outbox.listening(db, (package.source_id,)):
        outbox.emit(db, [event(package.source_id, package.package, actor, facts)], now=now)


def history(
    engine: Engine, source_id: int, package: str, *, limit: int = 100, before: int | None = None
) -> list[HistoryEntry]:
    """The package's history, newest first (``before``: an entry's id, for the next page)."""
    h = t.package_history
    with engine.connect() as db:
        found = owned(db, source_id, package, lock=False)
        query = select(h.c.id, h.c.at, h.c.actor, h.c.change, h.c.facts).where(
            h.c.package_id == found.id
        )
        if before is not None:
            query = query.where(h.c.id < before)
        rows = db.execute(query.order_by(desc(h.c.id)).limit(limit)).all()
    return [
        HistoryEntry(row.id, row.at, row.actor, row.change, orjson.loads(row.facts)) for row in rows
    ]
