"""A package's whitelist: devices added and removed in bulk, each call one transaction.

Both writes are idempotent: adding a device already there with the same description, or
removing one that is not there, changes nothing and says so in the counts; adding one
already there with another description replaces the description (the device keeps the time
it was first added). The package's row is locked first (``FOR UPDATE``; on SQLite the
transaction holds the write lock from its start), so two writes to one package's whitelist
follow one another and neither fails on the other's rows, and a package deleted meanwhile
is told apart (:class:`GonePackage`). Every change moves the catalogue generation through
the table's triggers (migration 0019).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Engine, bindparam, delete, insert, select, update
from sqlalchemy.engine import Connection

from pkgcat.storage import schema as t
from pkgcat.storage.engine import write_transaction
from pkgcat.storage.writes.bulk import executemany


class GonePackage(Exception):
    """The package was deleted between the caller's check and the write."""


@dataclass(frozen=True, slots=True)
class WhitelistChange:
    """What one write did to a package's whitelist, device by device."""

    added: int = 0
    updated: int = 0
    """Already there, with another description: the description was replaced."""
    unchanged: int = 0
    """Already there with that description (an add), or not there (a remove)."""
    removed: int = 0


def _locked(db: Connection, package_row_id: int) -> None:
    found = db.execute(
        select(t.packages.c.id).where(t.packages.c.id == package_row_id).with_for_update()
    ).first()
    if found is None:
        raise GonePackage(package_row_id)


def _present(db: Connection, package_row_id: int, udids: Sequence[str]) -> dict[str, str]:
    w = t.package_whitelist
    query = select(w.c.udid, w.c.description).where(
        w.c.package_id == package_row_id, w.c.udid.in_(udids)
    )
    return {row.udid: row.description for row in db.execute(query)}


def add(
    engine: Engine, package_row_id: int, entries: Sequence[tuple[str, str]], now: int
) -> WhitelistChange:
    """Put each (udid, description) on the package's whitelist; a udid given twice takes its
    last description. The caller keeps a call's entries within a few hundred (one ``IN``)."""
    wanted = dict(entries)
    w = t.package_whitelist
    with write_transaction(engine) as db:
        _locked(db, package_row_id)
        present = _present(db, package_row_id, list(wanted))
        new = [(package_row_id, u, d, now) for u, d in wanted.items() if u not in present]
        changed = [(d, package_row_id, u) for u, d in wanted.items() if present.get(u, d) != d]
        names = ("package_id", "udid", "description", "added_at")
        executemany(db, insert(w).values({n: bindparam(f"p_{n}") for n in names}), names, new)
        if changed:
            statement = (
                update(w)
                .where(w.c.package_id == bindparam("p_package"), w.c.udid == bindparam("p_udid"))
                .values(description=bindparam("p_description"))
            )
            executemany(db, statement, ("description", "package", "udid"), changed)
    return WhitelistChange(
        added=len(new), updated=len(changed), unchanged=len(wanted) - len(new) - len(changed)
    )


def remove(engine: Engine, package_row_id: int, udids: Sequence[str]) -> WhitelistChange:
    """Take each udid off the package's whitelist (one not there is left as it is)."""
    wanted = set(udids)
    w = t.package_whitelist
    with write_transaction(engine) as db:
        _locked(db, package_row_id)
        gone = db.execute(
            delete(w).where(w.c.package_id == package_row_id, w.c.udid.in_(sorted(wanted)))
        ).rowcount
    return WhitelistChange(removed=gone, unchanged=len(wanted) - gone)


def package_row(engine: Engine, package: str) -> int | None:
    """The row id of the package ``package`` (any source's, online or not), if there is one."""
    with engine.connect() as db:
        found = db.execute(select(t.packages.c.id).where(t.packages.c.package == package)).first()
    return None if found is None else int(found.id)


def listed(engine: Engine, package_row_id: int) -> list[tuple[str, str, int]]:
    """Every device on the package's whitelist, by udid (the operator's ``whitelist list``)."""
    w = t.package_whitelist
    query = select(w.c.udid, w.c.description, w.c.added_at).where(w.c.package_id == package_row_id)
    with engine.connect() as db:
        found = [(row.udid, row.description, row.added_at) for row in db.execute(query)]
    return sorted(found)  # byte order, as the API's pages, whatever the database's collation
