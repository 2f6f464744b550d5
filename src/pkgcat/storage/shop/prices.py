"""A package's price, currency and availability, and its sale, as its seller sets them.

The same columns the operator's ``import-prices`` sets (``packages.price`` and ``currency``):
whoever sets them last wins, and the history says who set what.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson
from sqlalchemy import Engine, delete, select, update
from sqlalchemy.engine import Connection

from pkgcat.events import PackageAvailabilityChanged, PackagePriceChanged, PackageSaleChanged
from pkgcat.shop.errors import ShopRefused
from pkgcat.shop.values import Discount, Price, Sale
from pkgcat.storage import schema as t
from pkgcat.storage.engine import write_transaction
from pkgcat.storage.shop import discounts
from pkgcat.storage.shop.log import Owned, changed, owned
from pkgcat.storage.writes import outbox

Check = Callable[[str, str], str]
"""Checks a sale against the list price and currency, under the package's lock; the
sale's price as stored."""


def set_price(
    engine: Engine,
    source_id: int,
    package: str,
    *,
    price: str | None,
    currency: str | None,
    online: bool | None,
    actor: str,
    now: int,
) -> Price:
    """Set what is given (None: unchanged); the price is checked against its currency by the
    caller. A sale running in another currency than the new one ends with the change."""
    with write_transaction(engine) as db:
        found = owned(db, source_id, package)
        new_price = found.price if price is None else price
        new_currency = found.currency if currency is None else currency
        if (new_price, new_currency) != (found.price, found.currency):
            db.execute(
                update(t.packages)
                .where(t.packages.c.id == found.id)
                .values(price=new_price, currency=new_currency)
            )
            facts = {"price": new_price, "currency": new_currency}
            changed(db, found, actor, PackagePriceChanged, facts, now)
            if new_currency != found.currency or new_price is None:
                _end_sale(db, found, actor, now, "the price changed currency")
        if online is not None and online != found.online:
            db.execute(update(t.packages).where(t.packages.c.id == found.id).values(online=online))
            changed(db, found, actor, PackageAvailabilityChanged, {"online": online}, now)
        return Price(
            found.package, new_price, new_currency, found.online if online is None else online
        )


def price_changes(db: Connection, rows: list[tuple[int, str, str]], actor: str, now: int) -> None:
    """The history lines and events of prices an operator's file set (package id, price,
    currency), in the file's transaction (which stamped the rows already): one statement
    for the lines, one for the events, however many rows."""
    p, h = t.packages, t.package_history
    ids = [package_id for package_id, _, _ in rows]
    found = {
        row.id: (row.source_id, row.package)
        for row in db.execute(select(p.c.id, p.c.source_id, p.c.package).where(p.c.id.in_(ids)))
    }
    facts = [{"price": price, "currency": currency} for _, price, currency in rows]
    db.execute(
        h.insert(),
        [
            {"package_id": package_id, "source_id": found[package_id][0], "at": now,
             "actor": actor, "change": PackagePriceChanged.name,
             "facts": orjson.dumps(fact).decode()}
            for (package_id, _, _), fact in zip(rows, facts, strict=True)
        ],
    )  # fmt: skip
    heard = outbox.listening(db, {source for source, _ in found.values()})
    events = [
        PackagePriceChanged(found[package_id][0], found[package_id][1], actor, fact)
        for (package_id, _, _), fact in zip(rows, facts, strict=True)
        if found[package_id][0] in heard
    ]
    outbox.emit(db, events, now=now)


def _sale(db: Connection, found: Owned) -> Sale | None:
    s = t.package_sales
    row = db.execute(
        select(s.c.price, s.c.starts_at, s.c.ends_at).where(s.c.package_id == found.id)
    ).first()
    if row is None:
        return None
    return Sale(found.package, row.price, found.currency, row.starts_at, row.ends_at)


def _end_sale(db: Connection, found: Owned, actor: str, now: int, reason: str) -> None:
    s = t.package_sales
    if db.execute(delete(s).where(s.c.package_id == found.id)).rowcount:
        changed(db, found, actor, PackageSaleChanged, {"sale_price": None, "reason": reason}, now)


def set_sale(
    engine: Engine,
    source_id: int,
    package: str,
    *,
    price: str,
    starts_at: int,
    ends_at: int,
    check: Check,
    actor: str,
    now: int,
) -> Sale:
    """Set the package's sale (replacing any), once ``check(list price, currency)`` passes
    under the package's lock (it raises :class:`ShopRefused` naming the field)."""
    with write_transaction(engine) as db:
        found = owned(db, source_id, package)
        if found.price is None:
            raise ShopRefused("price", f"{package} has no price to put on sale yet", "conflict")
        price = check(found.price, found.currency)
        s = t.package_sales
        db.execute(delete(s).where(s.c.package_id == found.id))
        db.execute(
            s.insert().values(
                package_id=found.id,
                source_id=source_id,
                price=price,
                starts_at=starts_at,
                ends_at=ends_at,
                created_at=now,
            )
        )
        facts = {"sale_price": price, "starts_at": starts_at, "ends_at": ends_at}
        changed(db, found, actor, PackageSaleChanged, facts, now)
        return Sale(found.package, price, found.currency, starts_at, ends_at)


def end_sale(engine: Engine, source_id: int, package: str, *, actor: str, now: int) -> None:
    """Remove the package's sale; :class:`ShopRefused` when it has none."""
    with write_transaction(engine) as db:
        found = owned(db, source_id, package)
        if _sale(db, found) is None:
            raise ShopRefused("package", f"{package} has no sale", "missing")
        _end_sale(db, found, actor, now, "ended by the seller")


def sale_of(db: Connection, package_id: int, package: str, currency: str) -> Sale | None:
    s = t.package_sales
    row = db.execute(
        select(s.c.price, s.c.starts_at, s.c.ends_at).where(s.c.package_id == package_id)
    ).first()
    return None if row is None else Sale(package, row.price, currency, row.starts_at, row.ends_at)


def read_price(engine: Engine, source_id: int, package: str) -> tuple[Price, Sale | None]:
    with engine.connect() as db:
        found = owned(db, source_id, package, lock=False)
        return Price(found.package, found.price, found.currency, found.online), _sale(db, found)


def offer(
    engine: Engine, package_id: int, package: str, currency: str, buyer_id: int | None, now: int
) -> tuple[Sale | None, Discount | None]:
    """The package's sale and the buyer's usable discount code for it (None: signed out)."""
    with engine.connect() as db:
        sale = sale_of(db, package_id, package, currency)
        discount = None if buyer_id is None else discounts.pending(db, buyer_id, package_id, now)
    return sale, discount
