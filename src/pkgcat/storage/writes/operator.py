"""Writing the operator's purchases, statistics and prices: one transaction per file.

The transaction opens first, the rows are validated against the catalogue as
it is inside it (by the caller's ``validate``: :mod:`pkgcat.ingest.operator_data`'s,
which passes it here), and only a file without a single problem is written. Validation only reads: the database's write lock
is taken by the first write, after it, and held for the writes alone.
Purchases are keyed by ``txn_id``: a purchase already recorded with the same
details is left alone, one recorded with other details (a refund changing its
status, say) is updated, so importing the same file again changes nothing.
Each purchase that names a device (``udid``) registers it for its buyer in
``buyer_devices``, in the same transaction: a device already registered keeps
its account and model unless the file gives others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Generic, TypeVar

from sqlalchemy import Engine, and_, bindparam, insert, select, update
from sqlalchemy.engine import Connection

from pkgcat.domain import Scope
from pkgcat.events import SALE_BY_STATUS
from pkgcat.shop.values import operator
from pkgcat.storage import schema as t
from pkgcat.storage.shop.prices import price_changes
from pkgcat.storage.writes import outbox
from pkgcat.storage.writes.bulk import executemany, update_rows

_PURCHASE_FIELDS = (
    "source_id", "package_id", "allowed_for", "nickname", "status", "total", "commission",
    "currency", "purchased_at", "profile_url", "payment_platform", "account", "udid",
    "device_model",
)  # fmt: skip
_STATUS = _PURCHASE_FIELDS.index("status")
_DEVICE_KEY = ("source_id", "udid", "nickname")
_DEVICE_DETAILS = ("account", "device_model")
_CHUNK = 500
"""Identifiers per ``IN (...)`` lookup: well under every database's parameter limit."""


RowT = TypeVar("RowT")


@dataclass(frozen=True, slots=True)
class PackageRef:
    """A package as the checks see it: its row id, its source's, and whether it is free."""

    id: int
    source_id: int
    free: bool


@dataclass(frozen=True, slots=True)
class Catalogue:
    """What validation checks rows against: packages and sources, by name."""

    packages: Mapping[str, PackageRef]
    sources: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Checked(Generic[RowT]):
    """The rows of a file without problems, and the columns of the file that were not read."""

    rows: list[RowT]
    ignored: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PurchaseRow:
    line: int
    source_id: int
    package_id: int | None
    allowed_for: Scope
    nickname: str
    status: str
    total: str
    commission: str
    currency: str
    purchased_at: int
    txn_id: str
    profile_url: str
    payment_platform: str
    account: str | None = None
    udid: str | None = None
    device_model: str | None = None


@dataclass(frozen=True, slots=True)
class StatsRow:
    line: int
    package_id: int
    total_download: int
    total_votes: int
    total_value_votes: int


@dataclass(frozen=True, slots=True)
class PriceRow:
    line: int
    package_id: int
    price: str
    currency: str


Validate = Callable[[Catalogue], Checked[RowT]]
"""A file's validation against the catalogue as the write's transaction sees it."""


@dataclass(frozen=True, slots=True)
class Written:
    """What an operator-data import did; ``ignored`` names the file's columns not read."""

    rows: int
    added: int
    updated: int
    unchanged: int
    ignored: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {
            "rows": self.rows,
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "ignored_columns": list(self.ignored),
        }


def _free(price: str | None, commercial: bool) -> bool:
    """As details show it: a price of zero, or no price and no ``cydia::commercial`` tag."""
    return Decimal(price) == 0 if price is not None else not commercial


def _catalogue(db: Connection) -> Catalogue:
    p, s = t.packages, t.sources
    return Catalogue(
        packages={
            row.package: PackageRef(row.id, row.source_id, _free(row.price, row.commercial))
            for row in db.execute(
                select(p.c.package, p.c.id, p.c.source_id, p.c.price, p.c.commercial)
            )
        },
        sources={row.name: row.id for row in db.execute(select(s.c.name, s.c.id))},
    )


def _in_chunks(keys: list[Any], fetch: Callable[[list[Any]], Any]) -> list[Any]:
    found: list[Any] = []
    for start in range(0, len(keys), _CHUNK):
        found.extend(fetch(keys[start : start + _CHUNK]))
    return found


def write_purchases(engine: Engine, validate: Validate[PurchaseRow]) -> Written:
    """Validate every purchase of a file, then add the new ones and update the changed ones."""
    p = t.purchases
    with engine.begin() as db:
        catalogue = _catalogue(db)
        checked = validate(catalogue)
        rows = checked.rows
        stored = {
            row.txn_id: tuple(row)[1:]
            for row in _in_chunks(
                [r.txn_id for r in rows],
                lambda ids: db.execute(
                    select(p.c.txn_id, *(p.c[f] for f in _PURCHASE_FIELDS)).where(
                        p.c.txn_id.in_(ids)
                    )
                ),
            )
        }
        added: list[tuple[Any, ...]] = []
        changed: list[tuple[Any, ...]] = []
        sales: list[PurchaseRow] = []
        for row in rows:
            values = tuple(getattr(row, f) for f in _PURCHASE_FIELDS)
            before = stored.get(row.txn_id)
            if before is None:
                added.append((*values, row.txn_id))
                sales.append(row)
            elif before != values:
                changed.append((*values, row.txn_id))
                if before[_STATUS] != row.status:
                    sales.append(row)
        names = (*_PURCHASE_FIELDS, "txn_id")
        executemany(db, insert(p).values({n: bindparam(f"p_{n}") for n in names}), names, added)
        update_rows(db, p, "txn_id", _PURCHASE_FIELDS, changed)
        _register_devices(db, rows)
        _emit_sales(db, sales, catalogue)
    unchanged = len(rows) - len(added) - len(changed)
    return Written(len(rows), len(added), len(changed), unchanged, checked.ignored)


def _emit_sales(db: Connection, sales: list[PurchaseRow], catalogue: Catalogue) -> None:
    """A sale event for each purchase added, and for each whose status changed (a refund...)."""
    heard = outbox.listening(db, {row.source_id for row in sales})
    if not heard:
        return
    names = {ref.id: name for name, ref in catalogue.packages.items()}
    events = [
        SALE_BY_STATUS[row.status](  # in the order of SaleEvent's fields (by position: 3x faster)
            row.source_id,
            row.txn_id,
            None if row.package_id is None else names[row.package_id],
            row.allowed_for,
            row.nickname,
            row.status,
            row.total,
            row.commission,
            row.currency,
            row.purchased_at,
            row.profile_url,
            row.payment_platform,
        )
        for row in sales
        if row.source_id in heard
    ]
    outbox.emit(db, events, now=int(time.time()))


def _register_devices(db: Connection, rows: list[PurchaseRow]) -> None:
    """Register each device the purchases name for its buyer (one buyer may have several)."""
    d = t.buyer_devices
    wanted: dict[tuple[Any, ...], tuple[str | None, str | None]] = {}
    for row in rows:
        if row.udid is None:
            continue
        key = (row.source_id, row.udid, row.nickname)
        account, model = wanted.get(key, (None, None))  # a later row adds to an earlier one
        wanted[key] = (row.account or account, row.device_model or model)
    sources = sorted({source for source, _, _ in wanted})
    stored = {
        (found.source_id, found.udid, found.nickname): (found.account, found.device_model)
        for found in _in_chunks(
            sorted({udid for _, udid, _ in wanted}),
            lambda udids: db.execute(
                select(*(d.c[c] for c in (*_DEVICE_KEY, *_DEVICE_DETAILS))).where(
                    d.c.source_id.in_(sources), d.c.udid.in_(udids)
                )
            ),
        )
    }
    added: list[tuple[Any, ...]] = []
    changed: list[tuple[Any, ...]] = []
    for key, (account, model) in wanted.items():
        if key not in stored:
            added.append((*key, account, model))
            continue
        old_account, old_model = stored[key]
        details = (account or old_account, model or old_model)
        if details != stored[key]:
            changed.append((*details, *key))
    names = (*_DEVICE_KEY, *_DEVICE_DETAILS)
    executemany(db, insert(d).values({n: bindparam(f"p_{n}") for n in names}), names, added)
    executemany(
        db,
        update(d)
        .where(and_(*(d.c[c] == bindparam(f"p_{c}") for c in _DEVICE_KEY)))
        .values({c: bindparam(f"p_{c}") for c in _DEVICE_DETAILS}),
        (*_DEVICE_DETAILS, *_DEVICE_KEY),
        changed,
    )


def _set_columns(
    engine: Engine,
    validate: Validate[Any],
    columns: tuple[str, ...],
    stamp: int | None = None,
    on_change: Callable[[Connection, list[tuple[Any, ...]]], None] | None = None,
) -> Written:
    """Set ``columns`` of each package the file names to the row's values (and its
    ``updated_at`` to ``stamp``, when given, for each row that changes)."""
    p = t.packages
    with engine.begin() as db:
        checked = validate(_catalogue(db))
        rows = checked.rows
        current = {
            row.id: tuple(row)[1:]
            for row in _in_chunks(
                [r.package_id for r in rows],
                lambda ids: db.execute(
                    select(p.c.id, *(p.c[c] for c in columns)).where(p.c.id.in_(ids))
                ),
            )
        }
        changed = [
            (*values, *([] if stamp is None else [stamp]), row.package_id)
            for row in rows
            if current[row.package_id] != (values := tuple(getattr(row, c) for c in columns))
        ]
        written = columns if stamp is None else (*columns, "updated_at")
        update_rows(db, p, "id", written, changed)
        if on_change is not None and changed:
            on_change(db, changed)
    return Written(len(rows), 0, len(changed), len(rows) - len(changed), checked.ignored)


def write_stats(engine: Engine, validate: Validate[StatsRow]) -> Written:
    """Set the download and vote counts of each package the file names."""
    columns = ("total_download", "total_votes", "total_value_votes")
    return _set_columns(engine, validate, columns)


def write_prices(engine: Engine, validate: Validate[PriceRow]) -> Written:
    """Set the price and currency of each package the file names.

    A package whose price changes is stamped ``updated_at``: the served indexes show the
    price (a paid package's ``Tag``, its depiction), and their ``Last-Modified`` is the
    latest such stamp, which clients that ask with ``If-Modified-Since`` (Zebra) compare.
    """
    now = int(time.time())

    def told(db: Connection, changed: list[tuple[Any, ...]]) -> None:
        # Each price changed is a line of its package's history and an event, as a seller's is.
        price_changes(
            db, [(row[-1], row[0], row[1]) for row in changed], operator("import-prices"), now
        )

    return _set_columns(engine, validate, ("price", "currency"), now, told)
