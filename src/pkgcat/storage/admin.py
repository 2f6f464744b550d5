"""Operator writes (sources, applications, keys, catalogue data) through SQLAlchemy Core.

Portable across the databases SQLAlchemy speaks; the request path does not
use this module. Each public method is one transaction: it commits whole or
not at all.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Engine,
    Table,
    delete,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection

from pkgcat import keys
from pkgcat.domain import Application, Shape, Source
from pkgcat.storage import schema as t
from pkgcat.storage.engine import engine_for
from pkgcat.storage.writes import sources

# Re-exported: the rule of a source lives with the other writes; callers import them from here.
from pkgcat.storage.writes.sources import AdminError as AdminError
from pkgcat.storage.writes.sources import check_address as check_address


@dataclass(frozen=True, slots=True)
class IssuedKey:
    """A key just created: the only moment the plain key exists."""

    secret_key: str
    prefix: str
    application: Application
    source: Source


@dataclass(frozen=True, slots=True)
class KeyInfo:
    prefix: str
    source: str
    application: str
    created_at: int
    last_used_at: int | None
    revoked_at: int | None


def _now() -> int:
    return int(time.time())


def _source(row: Any) -> Source:
    return Source(id=row.id, name=row.name, origin=row.origin, url=row.url)


def _application(row: Any) -> Application:
    return Application(
        id=row.id, source_id=row.source_id, name=row.name, shape=row.shape, timezone=row.timezone
    )


def _advance_sequence(db: Connection, table: Table) -> None:
    """After rows were inserted with their own ids, move the id sequence past them.

    SQLite picks the next rowid from the table itself; PostgreSQL's serial
    columns draw from a sequence that explicit ids do not advance, so the next
    row added without an id would collide with a loaded one.
    """
    if db.dialect.name == "postgresql" and "id" in table.c:
        db.execute(
            text(
                f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "  # noqa: S608 - a table of our schema
                f"(SELECT coalesce(max(id), 0) + 1 FROM {table.name}), false)"
            )
        )


class CatalogueAdmin:
    """The operator's side of the catalogue."""

    def __init__(self, database_url: str) -> None:
        self.engine: Engine = engine_for(database_url)

    def close(self) -> None:
        self.engine.dispose()

    # Sources ---------------------------------------------------------------

    def add_source(self, name: str, url: str, origin: str = "") -> Source:
        with self.engine.begin() as db:
            return sources.add_source(db, name, url, origin=origin, now=_now())

    def _source_named(self, db: Connection, name: str) -> Source:
        row = db.execute(select(t.sources).where(t.sources.c.name == name)).first()
        if row is None:
            known = db.execute(select(t.sources.c.name).order_by(t.sources.c.name)).scalars().all()
            hint = (
                f"; known sources: {', '.join(known)}"
                if known
                else "; add it with 'pkgcat source add'"
            )
            raise AdminError(f"no source named {name!r}{hint}")
        return _source(row)

    # Applications and keys ---------------------------------------------------

    def create_application(
        self, source: str, name: str, shape: Shape | None = None, timezone: str | None = None
    ) -> IssuedKey:
        """A new application of ``source`` with its first key."""
        with self.engine.begin() as db:
            src = self._source_named(db, source)
            exists = db.execute(
                select(t.applications.c.id).where(
                    t.applications.c.source_id == src.id, t.applications.c.name == name
                )
            ).first()
            if exists:
                raise AdminError(f"source {source!r} has an application named {name!r} already")
            row_id = db.execute(
                insert(t.applications).values(
                    source_id=src.id, name=name, shape=shape, timezone=timezone, created_at=_now()
                )
            ).inserted_primary_key
            assert row_id is not None
            app = Application(
                id=row_id[0], source_id=src.id, name=name, shape=shape, timezone=timezone
            )
            return self._issue(db, app, src)

    def create_key(self, source: str, application: str) -> IssuedKey:
        """Another key for an existing application (keys can be rotated without downtime)."""
        with self.engine.begin() as db:
            src = self._source_named(db, source)
            row = db.execute(
                select(t.applications).where(
                    t.applications.c.source_id == src.id, t.applications.c.name == application
                )
            ).first()
            if row is None:
                raise AdminError(f"source {source!r} has no application named {application!r}")
            return self._issue(db, _application(row), src)

    def _issue(self, db: Connection, app: Application, src: Source) -> IssuedKey:
        secret = keys.new_key()
        prefix = keys.display_prefix(secret)
        db.execute(
            insert(t.secret_keys).values(
                application_id=app.id,
                key_hash=keys.hash_key(secret),
                prefix=prefix,
                created_at=_now(),
            )
        )
        return IssuedKey(secret_key=secret, prefix=prefix, application=app, source=src)

    def revoke_key(self, prefix: str) -> KeyInfo:
        """Revoke the one live key whose display prefix starts with ``prefix``."""
        if len(prefix) < len(keys.KEY_PREFIX) + 4:
            raise AdminError(
                f"give at least {len(keys.KEY_PREFIX) + 4} characters of the key prefix "
                "(as 'pkgcat key list' shows it)"
            )
        wanted = prefix[: keys.DISPLAY_PREFIX_LENGTH]
        with self.engine.begin() as db:
            rows = db.execute(
                select(t.secret_keys.c.id, t.secret_keys.c.prefix).where(
                    # Exact and case-sensitive: LIKE (startswith) would fold case in
                    # SQLite and read '_' as a wildcard, and could revoke another key.
                    func.substr(t.secret_keys.c.prefix, 1, len(wanted)) == wanted,
                    t.secret_keys.c.revoked_at.is_(None),
                )
            ).all()
            if not rows:
                raise AdminError(f"no live key starts with {prefix!r}")
            if len(rows) > 1:
                found = ", ".join(sorted(r.prefix for r in rows))
                raise AdminError(f"{prefix!r} matches {len(rows)} keys ({found}); give more of it")
            db.execute(
                update(t.secret_keys)
                .where(t.secret_keys.c.id == rows[0].id)
                .values(revoked_at=_now())
            )
            return self._key_infos(db, t.secret_keys.c.id == rows[0].id)[0]

    def list_keys(self) -> list[KeyInfo]:
        with self.engine.connect() as db:
            return self._key_infos(db)

    def _key_infos(self, db: Connection, *where: ColumnElement[bool]) -> list[KeyInfo]:
        query = (
            select(
                t.secret_keys.c.prefix,
                t.sources.c.name.label("source"),
                t.applications.c.name.label("application"),
                t.secret_keys.c.created_at,
                t.secret_keys.c.last_used_at,
                t.secret_keys.c.revoked_at,
            )
            .join(t.applications, t.applications.c.id == t.secret_keys.c.application_id)
            .join(t.sources, t.sources.c.id == t.applications.c.source_id)
            .where(*where)
            .order_by(t.sources.c.name, t.applications.c.name, t.secret_keys.c.created_at)
        )
        return [KeyInfo(**row._mapping) for row in db.execute(query)]

    # Catalogue data ------------------------------------------------------------

    def is_empty(self) -> bool:
        with self.engine.connect() as db:
            return not db.execute(select(func.count()).select_from(t.sources)).scalar_one()

    def load(
        self,
        *,
        sources: Iterable[Mapping[str, Any]] = (),
        applications: Iterable[Mapping[str, Any]] = (),
        packages: Iterable[Mapping[str, Any]] = (),
        purchases: Iterable[Mapping[str, Any]] = (),
        usage: Iterable[tuple[int, date, int]] = (),
        replace: bool = False,
    ) -> dict[int, IssuedKey]:
        """Insert rows (column name to value) in one transaction, with a key per application.

        With ``replace``, every existing row is deleted first, in the same transaction.
        Returns the new key of each application, by application id.
        """
        with self.engine.begin() as db:
            if replace:
                for table in reversed(t.metadata.sorted_tables):
                    if table is not t.catalogue_generation:  # a counter, not catalogue data
                        db.execute(delete(table))
            app_rows = list(applications)
            for table, rows in (
                (t.sources, list(sources)),
                (t.applications, app_rows),
                (t.packages, list(packages)),
                (t.purchases, list(purchases)),
            ):
                if rows:
                    db.execute(insert(table), rows)
                    _advance_sequence(db, table)
            usage_rows = [
                {"application_id": a, "day": d.isoformat(), "count": n} for a, d, n in usage
            ]
            if usage_rows:
                db.execute(insert(t.usage_days), usage_rows)
                # Usage history is cached by the server like catalogue data: say it changed.
                db.execute(
                    update(t.catalogue_generation)
                    .where(t.catalogue_generation.c.id == 1)
                    .values(value=t.catalogue_generation.c.value + 1)
                )
            issued: dict[int, IssuedKey] = {}
            for row in app_rows:
                app = _application(
                    db.execute(select(t.applications).where(t.applications.c.id == row["id"])).one()
                )
                src = _source(
                    db.execute(select(t.sources).where(t.sources.c.id == app.source_id)).one()
                )
                issued[app.id] = self._issue(db, app, src)
            return issued
