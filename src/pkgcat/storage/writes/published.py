"""A published .deb's database side: its file row, its catalogue record and its package row.

One transaction writes all three, so the catalogue never shows a published
version whose file is not listed, nor lists a file without its record:

- ``deb_files``: the file (digests, control paragraph), unique per
  (package, version, architecture);
- ``package_records``: the record its control file makes, as an import would
  write it (a record of the same key, imported earlier, is updated in place);
- ``packages``: the package's row copied from its best record (newest version,
  then the preferred architecture), created online if the package is new. Its
  price and statistics are never touched.

Triggers move the catalogue generation in the same transaction: details, and
the served repository's indexes, follow.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy import Engine, insert, select, update
from sqlalchemy.engine import Connection

from pkgcat.storage import schema as t
from pkgcat.storage.records import RECORD_COLUMNS, Record
from pkgcat.storage.writes import outbox
from pkgcat.storage.writes.imports import _copy_statements
from pkgcat.versions import Preference, best


@dataclass(frozen=True, slots=True)
class Owner:
    """What the catalogue already says about a file about to be published."""

    package_source: str | None
    """The name of the source that owns the package already, if any."""
    stored: str | None
    """The SHA-256 of the file already published for this (package, version, architecture)."""


def source_address(engine: Engine, name: str) -> tuple[int, str] | None:
    """The id and address of the source ``name``, or None when there is none."""
    s = t.sources
    with engine.connect() as db:
        found = db.execute(select(s.c.id, s.c.url).where(s.c.name == name)).first()
    return None if found is None else (found.id, found.url)


def read_owner(engine: Engine, package: str, version: str, architecture: str) -> Owner:
    """The package's owner and the file published under the same key, in one short read."""
    s, p, d = t.sources, t.packages, t.deb_files
    with engine.connect() as db:
        owner = db.execute(
            select(s.c.name).join(p, p.c.source_id == s.c.id).where(p.c.package == package)
        ).scalar()
        stored = db.execute(
            select(d.c.sha256).where(
                d.c.package == package, d.c.version == version, d.c.architecture == architecture
            )
        ).scalar()
    return Owner(package_source=owner, stored=stored)


def fingerprint(control: str) -> str:
    """The record's fingerprint: of its control paragraph (32 hex digits, as imports make them)."""
    return hashlib.blake2b(control.encode(), digest_size=16).hexdigest()


def write_published(
    engine: Engine,
    *,
    source_id: int,
    record: Record,
    control: str,
    digests: tuple[int, str, str, str, str],
    preference: Preference,
    now: int,
) -> None:
    """Write the file, its record and its package row in one transaction.

    ``digests``: size, MD5, SHA-1, SHA-256 and SHA-512 of the file. Raises
    SQLAlchemy's ``IntegrityError`` when another publish took the same key first.
    """
    with engine.begin() as db:
        key = (record.package, record.version, record.architecture)
        _insert_file(db, FileRow(source_id, key, control, digests, now))
        _write_record(db, source_id, record, fingerprint(control), now)
        new = _show_best(db, source_id, record.package, preference, now)
        if source_id in outbox.listening(db, (source_id,)):
            facts = {
                "package": record.package,
                "version": record.version,
                "architecture": record.architecture,
            }
            kind = "package.published" if new else "package.updated"
            outbox.emit(db, [(kind, source_id, facts)], now=now)


def _write_record(db: Connection, source_id: int, record: Record, print_: str, now: int) -> None:
    r = t.package_records
    values = dict(zip(RECORD_COLUMNS, record, strict=True))
    existing = db.execute(
        select(r.c.id).where(
            r.c.source_id == source_id,
            r.c.package == record.package,
            r.c.version == record.version,
            r.c.architecture == record.architecture,
        )
    ).scalar()
    if existing is None:
        db.execute(
            insert(r).values(
                source_id=source_id, **values, fingerprint=print_, first_seen=now, updated_at=now
            )
        )
    else:
        db.execute(
            update(r).where(r.c.id == existing).values(**values, fingerprint=print_, updated_at=now)
        )


def _show_best(
    db: Connection, source_id: int, package: str, preference: Preference, now: int
) -> bool:
    """The package row shows its best record, as after an import; whether the row is new."""
    r, p = t.package_records, t.packages
    records = [
        (version, architecture)
        for version, architecture in db.execute(
            select(r.c.version, r.c.architecture).where(
                r.c.source_id == source_id, r.c.package == package
            )
        )
    ]
    version, architecture = best(records, preference)
    row = db.execute(
        select(p.c.id).where(p.c.source_id == source_id, p.c.package == package)
    ).scalar()
    insert_row, update_row = _copy_statements()
    db.execute(
        insert_row if row is None else update_row,
        {
            "p_source_id": source_id,
            "p_package": package,
            "p_version": version,
            "p_architecture": architecture,
            "p_now": now,
        },
    )
    return row is None


def source_name(engine: Engine, source_id: int) -> str | None:
    """The name of the source with this id, or None when there is none (any more)."""
    with engine.connect() as db:
        return db.execute(select(t.sources.c.name).where(t.sources.c.id == source_id)).scalar()


def imported_keys(engine: Engine, source_id: int) -> set[tuple[str, str, str]]:
    """The (package, version, architecture) of every record the source holds."""
    r = t.package_records
    with engine.connect() as db:
        found = db.execute(
            select(r.c.package, r.c.version, r.c.architecture).where(r.c.source_id == source_id)
        )
        return {(row.package, row.version, row.architecture) for row in found}


def stored_file(engine: Engine, package: str, version: str, architecture: str) -> str | None:
    """The SHA-256 of the file held for this (package, version, architecture), if any."""
    d = t.deb_files
    with engine.connect() as db:
        return db.execute(
            select(d.c.sha256).where(
                d.c.package == package, d.c.version == version, d.c.architecture == architecture
            )
        ).scalar()


class FileRow(NamedTuple):
    """A stored .deb's row of ``deb_files``."""

    source_id: int
    key: tuple[str, str, str]
    """Its package, version and architecture."""
    control: str
    digests: tuple[int, str, str, str, str]
    """Size, MD5, SHA-1, SHA-256 and SHA-512 of the file."""
    now: int


def write_mirrored(engine: Engine, row: FileRow) -> None:
    """The file row of a .deb copied from an imported repository; its record is the import's.

    Raises SQLAlchemy's ``IntegrityError`` when a file of the same key was stored meanwhile.
    """
    with engine.begin() as db:
        _insert_file(db, row)


def _insert_file(db: Connection, row: FileRow) -> None:
    size, md5sum, sha1, sha256, sha512 = row.digests
    package, version, architecture = row.key
    db.execute(
        insert(t.deb_files).values(
            sha256=sha256,
            source_id=row.source_id,
            package=package,
            version=version,
            architecture=architecture,
            size=size,
            md5sum=md5sum,
            sha1=sha1,
            sha512=sha512,
            control=row.control,
            stored_at=row.now,
        )
    )
