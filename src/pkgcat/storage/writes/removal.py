"""Deleting sources and applications: refused while anything depends on them, unless cascading.

What depends on what (:mod:`pkgcat.storage.schema`)::

    source ── applications ── secret keys
           │               └─ usage days (and their split by operation)
           ├─ packages ──────── purchases of them
           │                  └─ devices on their whitelists
           ├─ purchases of the source itself
           ├─ the store's payments for the source or its packages
           ├─ its ledger, holds, payouts (and the entries each paid) and refunds (with cascade)
           ├─ its commission, payout thresholds and account (always: settings)
           ├─ buyers' registered devices
           ├─ imported package records
           ├─ published .deb files
           └─ webhook events (the outbox; deleted with a cascade, never counted)
    application ── webhook endpoints ── their delivery attempts

A delete that would leave any of these behind is refused with an
:class:`AdminError` naming each kind and how many. Cascading deletes them
in the caller's transaction, children first, so every foreign key holds at
each step and a failure leaves everything as it was. Without cascading, only
the row itself is deleted: were anything to depend on it after all, its
foreign key would refuse the delete rather than anything going with it.

Running servers hear of it through the catalogue generation: the triggers of
migration 0003 move it on any delete from sources, applications, packages,
purchases or secret keys, and an application's usage days never go without
the application itself.

The count and the delete must be one transaction, or a dependant added
between them would be missed. The functions run inside the caller's
transaction, which must be a
:func:`~pkgcat.storage.engine.write_transaction`: on PostgreSQL the row being
deleted is locked first (``FOR UPDATE``), so a concurrent insert of a
dependant waits for the delete and then fails its foreign key; on SQLite the
transaction holds the write lock from its first statement (``BEGIN
IMMEDIATE``), so no other writer can add a dependant until it ends. (SQLite's
driver would otherwise start the transaction at the first DELETE only, after
the count.)
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, Delete, Select, Table, delete, func, or_, select
from sqlalchemy.engine import Connection

from pkgcat.storage import schema as t
from pkgcat.storage.writes.sources import AdminError

_NOUNS = {
    "applications": ("application", "applications"),
    "keys": ("secret key", "secret keys"),
    "usage_days": ("day of usage", "days of usage"),
    "packages": ("package", "packages"),
    "purchases": ("purchase", "purchases"),
    "buyer_devices": ("registered device", "registered devices"),
    "whitelist": ("whitelisted device", "whitelisted devices"),
    "store_payments": ("store payment", "store payments"),
    "package_records": ("imported package record", "imported package records"),
    "deb_files": ("published file", "published files"),
    "webhooks": ("webhook endpoint", "webhook endpoints"),
}


@dataclass(frozen=True, slots=True)
class Dependants:
    """How many rows of each kind depend on a source or an application (zeros included)."""

    counts: dict[str, int]

    def __bool__(self) -> bool:
        return any(self.counts.values())

    def describe(self) -> str:
        """``"2 applications, 3 secret keys and 1 package"``: the kinds that have rows."""
        parts = [
            f"{n} {_NOUNS[kind][0] if n == 1 else _NOUNS[kind][1]}"
            for kind, n in self.counts.items()
            if n
        ]
        if len(parts) < 2:
            return "".join(parts) or "nothing"
        return f"{', '.join(parts[:-1])} and {parts[-1]}"


def _count(db: Connection, table: Table, where: ColumnElement[bool]) -> int:
    return int(db.execute(select(func.count()).select_from(table).where(where)).scalar_one())


def _apps_of(source_id: int) -> Select[tuple[int]]:
    return select(t.applications.c.id).where(t.applications.c.source_id == source_id)


def _source_purchases(source_id: int) -> ColumnElement[bool]:
    """Purchases of the source, or of one of its packages."""
    packages = select(t.packages.c.id).where(t.packages.c.source_id == source_id)
    return or_(t.purchases.c.source_id == source_id, t.purchases.c.package_id.in_(packages))


def _source_payments(source_id: int) -> ColumnElement[bool]:
    """The store's payments for the source, or for one of its packages."""
    packages = select(t.packages.c.id).where(t.packages.c.source_id == source_id)
    payments = t.store_payments.c
    return or_(payments.source_id == source_id, payments.package_id.in_(packages))


def _source_parts(source_id: int) -> list[tuple[str, Table, ColumnElement[bool]]]:
    """Each kind of dependant of a source, in an order that deletes children first."""
    apps = _apps_of(source_id)
    packages = select(t.packages.c.id).where(t.packages.c.source_id == source_id)
    endpoints = select(t.webhook_endpoints.c.id).where(t.webhook_endpoints.c.source_id == source_id)
    entries = select(t.ledger_entries.c.seq).where(t.ledger_entries.c.source_id == source_id)
    return [
        ("payout_items", t.payout_items, t.payout_items.c.entry_seq.in_(entries)),
        ("payouts", t.payouts, t.payouts.c.source_id == source_id),
        ("ledger_entries", t.ledger_entries, t.ledger_entries.c.source_id == source_id),
        ("ledger_holds", t.ledger_holds, t.ledger_holds.c.source_id == source_id),
        ("store_refunds", t.store_refunds, t.store_refunds.c.source_id == source_id),
        ("payout_thresholds", t.payout_thresholds, t.payout_thresholds.c.source_id == source_id),
        ("source_money", t.source_money, t.source_money.c.source_id == source_id),
        ("webhook_attempts", t.webhook_attempts, t.webhook_attempts.c.endpoint_id.in_(endpoints)),
        ("webhooks", t.webhook_endpoints, t.webhook_endpoints.c.source_id == source_id),
        ("webhook_events", t.webhook_events, t.webhook_events.c.source_id == source_id),
        (
            "idempotency_records",
            t.idempotency_records,
            t.idempotency_records.c.application_id.in_(apps),
        ),
        ("usage_operations", t.usage_operations, t.usage_operations.c.application_id.in_(apps)),
        ("usage_days", t.usage_days, t.usage_days.c.application_id.in_(apps)),
        ("keys", t.secret_keys, t.secret_keys.c.application_id.in_(apps)),
        ("applications", t.applications, t.applications.c.source_id == source_id),
        # The shop's rows go with the packages they are of (never named: the packages are).
        *_shop_parts(source_id),
        ("purchases", t.purchases, _source_purchases(source_id)),
        ("store_payments", t.store_payments, _source_payments(source_id)),
        ("buyer_devices", t.buyer_devices, t.buyer_devices.c.source_id == source_id),
        ("whitelist", t.package_whitelist, t.package_whitelist.c.package_id.in_(packages)),
        ("packages", t.packages, t.packages.c.source_id == source_id),
        ("package_records", t.package_records, t.package_records.c.source_id == source_id),
        # Their rows only: the blobs stay in the store (content-addressed, harmless).
        ("deb_files", t.deb_files, t.deb_files.c.source_id == source_id),
    ]


def _shop_parts(source_id: int) -> list[tuple[str, Table, ColumnElement[bool]]]:
    codes = select(t.discount_codes.c.id).where(t.discount_codes.c.source_id == source_id)
    return [
        ("buyer_discounts", t.buyer_discounts, t.buyer_discounts.c.discount_id.in_(codes)),
        *(
            (table.name, table, table.c.source_id == source_id)
            for table in (
                t.discount_codes, t.gift_codes, t.package_history, t.package_sales,
                t.package_versions, t.package_pages,
            )
        ),
    ]  # fmt: skip


def _application_parts(application_id: int) -> list[tuple[str, Table, ColumnElement[bool]]]:
    e = t.webhook_endpoints
    endpoints = select(e.c.id).where(e.c.application_id == application_id)
    return [
        ("webhook_attempts", t.webhook_attempts, t.webhook_attempts.c.endpoint_id.in_(endpoints)),
        ("webhooks", e, e.c.application_id == application_id),
        (
            "idempotency_records",
            t.idempotency_records,
            t.idempotency_records.c.application_id == application_id,
        ),
        (
            "usage_operations",
            t.usage_operations,
            t.usage_operations.c.application_id == application_id,
        ),
        ("usage_days", t.usage_days, t.usage_days.c.application_id == application_id),
        ("keys", t.secret_keys, t.secret_keys.c.application_id == application_id),
    ]


# The order a message names them in: the direct dependants first. Usage by operation goes
# with the usage days it splits, and is not named apart.
_SOURCE_ORDER = (
    "applications", "keys", "usage_days", "packages", "purchases", "store_payments",
    "buyer_devices", "whitelist", "package_records", "deb_files", "webhooks",
)  # fmt: skip
_APPLICATION_ORDER = ("keys", "usage_days", "webhooks")
_SETTINGS = ("idempotency_records", "payout_thresholds", "source_money")
"""Answers kept for retries, and a source's money settings (its commission, thresholds and
payout account): never named, and deleted with their application or source even without
``cascade`` (a later one given the same id must not find them). The ledger, payouts and
refunds of a source go only with its store purchases, which are named."""


def _remove(
    db: Connection,
    parts: list[tuple[str, Table, ColumnElement[bool]]],
    order: tuple[str, ...],
    last: Delete,
    *,
    what: str,
    cascade: bool,
) -> Dependants:
    counts = {kind: _count(db, table, where) for kind, table, where in parts}
    found = Dependants({kind: counts[kind] for kind in order})
    if found and not cascade:
        raise AdminError(
            f"{what} has {found.describe()}; "
            "delete them with it by adding --cascade, or remove them first"
        )
    for kind, table, where in parts:
        if cascade or kind in _SETTINGS:
            db.execute(delete(table).where(where))
    db.execute(last)
    return found


def delete_source(db: Connection, source_id: int, name: str, *, cascade: bool) -> Dependants:
    """Delete the source (and, with ``cascade``, everything of it); returns what went with it."""
    db.execute(select(t.sources.c.id).where(t.sources.c.id == source_id).with_for_update())
    return _remove(
        db,
        _source_parts(source_id),
        _SOURCE_ORDER,
        delete(t.sources).where(t.sources.c.id == source_id),
        what=f"source {name!r}",
        cascade=cascade,
    )


def delete_application(
    db: Connection, application_id: int, what: str, *, cascade: bool
) -> Dependants:
    """Delete the application (and, with ``cascade``, its keys and usage); returns what went."""
    db.execute(
        select(t.applications.c.id).where(t.applications.c.id == application_id).with_for_update()
    )
    return _remove(
        db,
        _application_parts(application_id),
        _APPLICATION_ORDER,
        delete(t.applications).where(t.applications.c.id == application_id),
        what=what,
        cascade=cascade,
    )
