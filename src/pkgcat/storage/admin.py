"""Operator writes (sources, applications, keys, catalogue data) through SQLAlchemy Core.

Portable across the databases SQLAlchemy speaks; the request path does not
use this module. Each public method is one transaction: it commits whole or
not at all, and one that writes holds it from its first read on
(:func:`~pkgcat.storage.engine.write_transaction`), so what it checked still
holds when it writes.

Listings are ordered here, not by the database: by name with case folded, then
by the name itself, the same on every backend (an ``ORDER BY`` would follow
PostgreSQL's collation, and SQLite's bytes).
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
from pkgcat.domain import Application, KeyKind, Shape, Source, scopes_text
from pkgcat.storage import schema as t
from pkgcat.storage.engine import engine_for, write_transaction
from pkgcat.storage.writes import removal, sources

# Re-exported: the rules live with the other writes; callers import them from here.
from pkgcat.storage.writes.removal import Dependants as Dependants
from pkgcat.storage.writes.sources import AdminError as AdminError
from pkgcat.storage.writes.sources import check_address as check_address


@dataclass(frozen=True, slots=True)
class IssuedKey:
    """A key just created: the only moment the plain key exists."""

    secret_key: str
    """The key itself, of either kind (``pkc_`` secret, ``pkp_`` public)."""
    prefix: str
    application: Application
    source: Source
    scopes: str = "read"
    kind: KeyKind = "secret"
    package: str | None = None
    """The one package a public key answers for, or ``None``: the whole source."""


@dataclass(frozen=True, slots=True)
class KeyInfo:
    prefix: str
    source: str
    application: str
    created_at: int
    last_used_at: int | None
    revoked_at: int | None
    scopes: str
    """Space-separated, as stored: ``read``, ``read publish``."""
    kind: KeyKind = "secret"
    package: str | None = None


@dataclass(frozen=True, slots=True)
class Revocation:
    """The key a revoke found, and whether it had been revoked before (then nothing changed)."""

    key: KeyInfo
    already: bool


@dataclass(frozen=True, slots=True)
class SourceInfo:
    id: int
    name: str
    label: str
    url: str
    origin: str
    created_at: int
    packages: int
    applications: int
    purchases: int


@dataclass(frozen=True, slots=True)
class ApplicationInfo:
    id: int
    source: str
    name: str
    shape: Shape | None
    """``None``: follows the deployment's ``PKGCAT_SHAPE``."""
    timezone: str | None
    """``None``: follows the deployment's ``PKGCAT_TIMEZONE``."""
    created_at: int
    keys: int
    live_keys: int


PAGE_COLUMNS = ("icon", "screenshots", "url", "compatible")
"""What a package's page shows beside its control file's fields (:meth:`CatalogueAdmin.set_pages`)."""


def _now() -> int:
    return int(time.time())


def _by_name(name: str) -> tuple[str, str]:
    """The sort key of a name in listings: ``alpha``, ``Beta``, ``beta``, ``zeta``, ``Émile``."""
    return (name.casefold(), name)


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


def _ambiguous(prefix: str, rows: list[Any], kind: str = "") -> AdminError:
    found = ", ".join(sorted(r.prefix for r in rows))
    return AdminError(f"{prefix!r} matches {len(rows)} {kind}keys ({found}); give more of it")


class CatalogueAdmin:
    """The operator's side of the catalogue."""

    def __init__(self, database: str | Engine) -> None:
        """On a database URL (its own engine, closed by :meth:`close`) or a caller's engine."""
        self._owned = not isinstance(database, Engine)
        self.engine: Engine = engine_for(database) if isinstance(database, str) else database

    def close(self) -> None:
        if self._owned:
            self.engine.dispose()

    # Sources ---------------------------------------------------------------

    def add_source(self, name: str, url: str, origin: str = "") -> Source:
        with write_transaction(self.engine) as db:
            return sources.add_source(db, name, url, origin=origin, now=_now())

    def list_sources(self) -> list[SourceInfo]:
        """Every source with how many packages, applications and purchases it has, by name."""
        s = t.sources

        def count(column: Any) -> Any:
            return select(func.count()).where(column == s.c.id).scalar_subquery()

        query = select(
            s.c.id, s.c.name, s.c.label, s.c.url, s.c.origin, s.c.created_at,
            count(t.packages.c.source_id).label("packages"),
            count(t.applications.c.source_id).label("applications"),
            count(t.purchases.c.source_id).label("purchases"),
        )  # fmt: skip
        with self.engine.connect() as db:
            found = [SourceInfo(**row._mapping) for row in db.execute(query)]
        return sorted(found, key=lambda s: _by_name(s.name))

    def delete_source(self, name: str, *, cascade: bool = False) -> Dependants:
        """Delete a source; with ``cascade``, with everything of it. Returns what went with it."""
        with write_transaction(self.engine) as db:
            src = self._source_named(db, name)
            return removal.delete_source(db, src.id, src.name, cascade=cascade)

    def _source_named(self, db: Connection, name: str) -> Source:
        row = db.execute(select(t.sources).where(t.sources.c.name == name)).first()
        if row is None:
            known = sorted(db.execute(select(t.sources.c.name)).scalars(), key=_by_name)
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
        with write_transaction(self.engine) as db:
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

    def create_key(
        self,
        source: str,
        application: str,
        scopes: tuple[str, ...] = (),
        *,
        kind: KeyKind = "secret",
        package: str | None = None,
    ) -> IssuedKey:
        """Another key for an existing application (keys can be rotated without downtime).

        ``scopes`` beyond ``read`` (which every secret key holds) grant writes, ``publish``
        uploads. A ``public`` key only checks devices' licences: it takes no scope, and may be
        made for one ``package`` of the source (a DRM API's package token).
        """
        if kind == "public" and scopes:
            raise AdminError("a public key only checks licences: it takes no --scope")
        if kind == "secret" and package is not None:
            raise AdminError(
                "only a public key is made for one package (--public --package): a secret "
                "key's other operations (sales, usage, uploads) span its whole source"
            )
        try:
            stored = scopes_text(scopes) if kind == "secret" else "read"
        except ValueError as error:
            raise AdminError(str(error)) from None
        with write_transaction(self.engine) as db:
            src = self._source_named(db, source)
            app = self._application_named(db, src, application)
            if package is not None:
                self._package_of(db, src, package)
            return self._issue(db, app, src, stored, kind=kind, package=package)

    def _package_of(self, db: Connection, src: Source, package: str) -> None:
        """:class:`AdminError` unless ``package`` is a package of ``src`` (online or not)."""
        found = db.execute(
            select(t.packages.c.source_id).where(t.packages.c.package == package)
        ).first()
        if found is None or found.source_id != src.id:
            raise AdminError(f"source {src.name!r} has no package {package!r}")

    def find_application(self, source: str, application: str) -> Application:
        """The application ``application`` of ``source``; :class:`AdminError` naming what is missing."""
        with self.engine.connect() as db:
            return self._application_named(db, self._source_named(db, source), application)

    def _application_named(self, db: Connection, src: Source, name: str) -> Application:
        row = db.execute(
            select(t.applications).where(
                t.applications.c.source_id == src.id, t.applications.c.name == name
            )
        ).first()
        if row is None:
            raise AdminError(f"source {src.name!r} has no application named {name!r}")
        return _application(row)

    def list_applications(self, source: str | None = None) -> list[ApplicationInfo]:
        """Every application (of ``source`` only, when given), by source and name."""
        a, k = t.applications, t.secret_keys
        keys_of = select(func.count()).where(k.c.application_id == a.c.id)
        query = (
            select(
                a.c.id, t.sources.c.name.label("source"), a.c.name, a.c.shape, a.c.timezone,
                a.c.created_at,
                keys_of.scalar_subquery().label("keys"),
                keys_of.where(k.c.revoked_at.is_(None)).scalar_subquery().label("live_keys"),
            )
            .join(t.sources, t.sources.c.id == a.c.source_id)
        )  # fmt: skip
        with self.engine.connect() as db:
            if source is not None:
                query = query.where(a.c.source_id == self._source_named(db, source).id)
            found = [ApplicationInfo(**row._mapping) for row in db.execute(query)]
        return sorted(found, key=lambda a: (_by_name(a.source), _by_name(a.name)))

    def delete_application(self, source: str, name: str, *, cascade: bool = False) -> Dependants:
        """Delete an application; with ``cascade``, with its keys and usage. Returns what went."""
        with write_transaction(self.engine) as db:
            src = self._source_named(db, source)
            app = self._application_named(db, src, name)
            return removal.delete_application(
                db, app.id, f"application {name!r} of {src.name!r}", cascade=cascade
            )

    def _issue(
        self,
        db: Connection,
        app: Application,
        src: Source,
        scopes: str = "read",
        *,
        kind: KeyKind = "secret",
        package: str | None = None,
    ) -> IssuedKey:
        secret = keys.new_key(kind)
        prefix = keys.display_prefix(secret)
        db.execute(
            insert(t.secret_keys).values(
                application_id=app.id,
                key_hash=keys.hash_key(secret),
                prefix=prefix,
                created_at=_now(),
                scopes=scopes,
                kind=kind,
                package=package,
            )
        )
        return IssuedKey(
            secret_key=secret,
            prefix=prefix,
            application=app,
            source=src,
            scopes=scopes,
            kind=kind,
            package=package,
        )

    def revoke_key(self, prefix: str) -> Revocation:
        """Revoke the one live key whose display prefix starts with ``prefix``.

        When no live key matches but exactly one revoked key does, nothing
        changes and the revocation says it was ``already`` done: revoking is
        idempotent, so a script may run it twice.
        """
        with write_transaction(self.engine) as db:
            rows = self._keys_starting(db, prefix)
            live = [r for r in rows if r.revoked_at is None]
            if len(live) > 1:
                raise _ambiguous(prefix, live)
            if live:
                db.execute(
                    update(t.secret_keys)
                    .where(t.secret_keys.c.id == live[0].id)
                    .values(revoked_at=_now())
                )
                return Revocation(self._key_infos(db, t.secret_keys.c.id == live[0].id)[0], False)
            if not rows:
                raise AdminError(f"no live key starts with {prefix!r}")
            if len(rows) > 1:
                raise _ambiguous(prefix, rows, "revoked ")
            return Revocation(self._key_infos(db, t.secret_keys.c.id == rows[0].id)[0], True)

    def delete_key(self, prefix: str) -> KeyInfo:
        """Delete a revoked key's row, its record of use with it; a live key is refused."""
        with write_transaction(self.engine) as db:
            rows = self._keys_starting(db, prefix)
            if not rows:
                raise AdminError(f"no key starts with {prefix!r}")
            if len(rows) > 1:
                raise _ambiguous(prefix, rows)
            info = self._key_infos(db, t.secret_keys.c.id == rows[0].id)[0]
            if info.revoked_at is None:
                raise AdminError(
                    f"{info.prefix} of {info.application!r} ({info.source}) is live; "
                    f"revoke it first with 'pkgcat key revoke {info.prefix}'"
                )
            db.execute(delete(t.secret_keys).where(t.secret_keys.c.id == rows[0].id))
            return info

    def _keys_starting(self, db: Connection, prefix: str) -> list[Any]:
        """The keys (id, prefix, revoked_at) whose display prefix starts with ``prefix``, locked."""
        if len(prefix) < len(keys.KEY_PREFIX) + 4:
            raise AdminError(
                f"give at least {len(keys.KEY_PREFIX) + 4} characters of the key prefix "
                "(as 'pkgcat key list' shows it)"
            )
        wanted = prefix[: keys.DISPLAY_PREFIX_LENGTH]
        k = t.secret_keys
        query = select(k.c.id, k.c.prefix, k.c.revoked_at).where(
            # Exact and case-sensitive: LIKE (startswith) would fold case in
            # SQLite and read '_' as a wildcard, and could reach another key.
            func.substr(k.c.prefix, 1, len(wanted)) == wanted
        )
        return list(db.execute(query.with_for_update()).all())

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
                t.secret_keys.c.scopes,
                t.secret_keys.c.kind,
                t.secret_keys.c.package,
            )
            .join(t.applications, t.applications.c.id == t.secret_keys.c.application_id)
            .join(t.sources, t.sources.c.id == t.applications.c.source_id)
            .where(*where)
            .order_by(t.secret_keys.c.created_at, t.secret_keys.c.id)
        )
        found = [KeyInfo(**row._mapping) for row in db.execute(query)]
        # A stable sort: an application's keys stay in the order they were created.
        return sorted(found, key=lambda k: (_by_name(k.source), _by_name(k.application)))

    # Catalogue data ------------------------------------------------------------

    def set_pages(self, packages: Iterable[Mapping[str, Any]]) -> None:
        """Give packages the page their rows name (``PAGE_COLUMNS``), in one transaction.

        A publish copies a package's row from its .deb's control file, which has no
        screenshots and may have no icon or depiction: the demo puts its catalogue's back.
        """
        p = t.packages
        with write_transaction(self.engine) as db:
            for row in packages:
                db.execute(
                    update(p)
                    .where(p.c.source_id == row["source_id"], p.c.package == row["package"])
                    .values({name: row[name] for name in PAGE_COLUMNS})
                )

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
        devices: Iterable[Mapping[str, Any]] = (),
        operations: Iterable[tuple[int, date, str, int]] = (),
        replace: bool = False,
    ) -> dict[int, IssuedKey]:
        """Insert rows (column name to value) in one transaction, with a key per application.

        ``usage`` is (application, day, count); ``operations`` splits some of those days
        as (application, day, operation, count), summing to the day's count.

        With ``replace``, every existing row is deleted first, in the same transaction
        (but for the catalogue generation and the database's own secrets).
        Returns the new key of each application, by application id.
        """
        with write_transaction(self.engine) as db:
            if replace:
                for table in reversed(t.metadata.sorted_tables):
                    # A counter and the cursor key: not catalogue data.
                    if table not in (t.catalogue_generation, t.api_secrets):
                        db.execute(delete(table))
            app_rows = list(applications)
            for table, rows in (
                (t.sources, list(sources)),
                (t.applications, app_rows),
                (t.packages, list(packages)),
                (t.purchases, list(purchases)),
                (t.buyer_devices, list(devices)),
            ):
                if rows:
                    db.execute(insert(table), rows)
                    _advance_sequence(db, table)
            usage_rows = [
                {"application_id": a, "day": d.isoformat(), "count": n} for a, d, n in usage
            ]
            split_rows = [
                {"application_id": a, "day": d.isoformat(), "operation": o, "count": n}
                for a, d, o, n in operations
            ]
            if split_rows:
                db.execute(insert(t.usage_operations), split_rows)
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
