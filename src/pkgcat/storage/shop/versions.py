"""A package's versions: each one's changelog, which are withdrawn, which is served now.

A version is **listed** (in the Packages index) unless it is withdrawn or newer, by dpkg's
order, than the version the seller rolled back to (``package_pages.served_version``); the
version **served** (details, depictions) is the newest listed one. A withdrawn version's
files stay stored and are kept for buyers who own the package (docs/repository.md,
"Versions"). Every change shows the package row's best listed record again, as a publish does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from debian.debian_support import Version as Dpkg
from sqlalchemy import Engine, select, update
from sqlalchemy.engine import Connection

from pkgcat.events import (
    PackageChangelogChanged,
    PackageVersionReleased,
    PackageVersionWithdrawn,
)
from pkgcat.shop.errors import ShopRefused
from pkgcat.shop.values import Version, VersionFile, Versions
from pkgcat.storage import schema as t
from pkgcat.storage.engine import write_transaction
from pkgcat.storage.shop.log import Owned, changed, owned
from pkgcat.storage.shop.pages import ensure_row


def listed(version: str, withdrawn: Iterable[str], pin: str | None) -> bool:
    """Whether the index lists ``version``: not withdrawn, and not newer than the pin."""
    if version in withdrawn:
        return False
    return pin is None or Dpkg(version) <= Dpkg(pin)


def listing(db: Connection, package_id: int | None) -> tuple[set[str], str | None]:
    """The package's withdrawn versions and its pin (the version rolled back to, or None)."""
    if package_id is None:
        return set(), None
    v, g = t.package_versions, t.package_pages
    withdrawn = set(
        db.execute(
            select(v.c.version).where(v.c.package_id == package_id, v.c.withdrawn_at.is_not(None))
        ).scalars()
    )
    pin = db.execute(select(g.c.served_version).where(g.c.package_id == package_id)).scalar()
    return withdrawn, pin


def unpin_for(db: Connection, package_id: int | None, version: str) -> None:
    """A newly published ``version`` newer than the pin is released: the pin goes."""
    if package_id is None:
        return
    _, pin = listing(db, package_id)
    if pin is not None and Dpkg(version) > Dpkg(pin):
        g = t.package_pages
        db.execute(update(g).where(g.c.package_id == package_id).values(served_version=None))


def _files(db: Connection, found: Owned) -> dict[str, list[tuple[str, str, int, int]]]:
    d = t.deb_files
    by_version: dict[str, list[tuple[str, str, int, int]]] = {}
    for row in db.execute(
        select(d.c.version, d.c.architecture, d.c.sha256, d.c.size, d.c.stored_at).where(
            d.c.source_id == found.source_id, d.c.package == found.package
        )
    ):
        by_version.setdefault(row.version, []).append(
            (row.architecture, row.sha256, row.size, row.stored_at)
        )
    return by_version


def _read(db: Connection, found: Owned) -> Versions:
    v = t.package_versions
    files = _files(db, found)
    notes = {
        row.version: row.changelog
        for row in db.execute(select(v.c.version, v.c.changelog).where(v.c.package_id == found.id))
    }
    withdrawn, pin = listing(db, found.id)
    served = db.execute(select(t.packages.c.version).where(t.packages.c.id == found.id)).scalar()
    versions = [
        Version(
            version=version,
            files=tuple(VersionFile(arch, sha, size) for arch, sha, size, _ in sorted(entries)),
            changelog=notes.get(version, ""),
            withdrawn=version in withdrawn,
            served=version == served,
            listed=listed(version, withdrawn, pin),
            published_at=min(stored for *_, stored in entries),
        )
        for version, entries in files.items()
    ]
    versions.sort(key=lambda one: Dpkg(one.version), reverse=True)
    return Versions(found.package, str(served), tuple(versions))


def read_versions(engine: Engine, source_id: int, package: str) -> Versions:
    """Every published version of the package, newest first, with its files and state."""
    with engine.connect() as db:
        return _read(db, owned(db, source_id, package, lock=False))


def _known(versions: Versions, version: str) -> Version:
    for one in versions.versions:
        if one.version == version or Dpkg(one.version) == Dpkg(version):
            return one
    known = ", ".join(one.version for one in versions.versions) or "none"
    raise ShopRefused(
        "version",
        f"{versions.package} has no published version {version!r} (published: {known})",
        "missing",
    )


def _version_row(db: Connection, found: Owned, version: str, now: int) -> None:
    v = t.package_versions
    key = (v.c.package_id == found.id) & (v.c.version == version)
    if db.execute(select(v.c.version).where(key)).first() is None:
        db.execute(
            v.insert().values(
                package_id=found.id, version=version, source_id=found.source_id, updated_at=now
            )
        )


def set_changelog(
    engine: Engine, source_id: int, package: str, version: str, text: str, *, actor: str, now: int
) -> Version:
    """Set a published version's changelog (Markdown, checked by the caller)."""
    with write_transaction(engine) as db:
        found = owned(db, source_id, package)
        one = _known(_read(db, found), version)
        _version_row(db, found, one.version, now)
        v = t.package_versions
        db.execute(
            update(v)
            .where(v.c.package_id == found.id, v.c.version == one.version)
            .values(changelog=text, updated_at=now)
        )
        facts = {"version": one.version, "changelog": text}
        changed(db, found, actor, PackageChangelogChanged, facts, now)
        return _known(_read(db, found), one.version)


Reshow = Callable[[Connection, int, str], None]
"""Shows the package row's best listed record again (:func:`pkgcat.storage.writes.published.reshow`)."""


def _pin(db: Connection, found: Owned, pin: str | None, now: int) -> None:
    ensure_row(db, found.id, found.source_id, now)
    g = t.package_pages
    db.execute(update(g).where(g.c.package_id == found.id).values(served_version=pin))


def release(
    engine: Engine,
    source_id: int,
    package: str,
    version: str,
    *,
    reshow: Reshow,
    rollback: bool,
    actor: str,
    now: int,
) -> Versions:
    """Serve ``version`` from now on: a release (it may be withdrawn: it comes back), or with
    ``rollback`` an earlier version than the one served, which must not be withdrawn.
    ``reshow(db, source_id, package)`` shows the package row's best listed record again."""
    with write_transaction(engine) as db:
        found = owned(db, source_id, package)
        before = _read(db, found)
        one = _known(before, version)
        if rollback:
            if Dpkg(one.version) >= Dpkg(before.served):
                raise ShopRefused(
                    "version",
                    f"{one.version} is not older than the version served ({before.served}); "
                    "roll back to an earlier version, or release this one",
                )
            if one.withdrawn:
                raise ShopRefused(
                    "version", f"{one.version} is withdrawn; release it to serve it again"
                )
        v = t.package_versions
        db.execute(
            update(v)
            .where(v.c.package_id == found.id, v.c.version == one.version)
            .values(withdrawn_at=None, updated_at=now)
        )
        withdrawn, _ = listing(db, found.id)
        newest = max((o.version for o in before.versions if o.version not in withdrawn), key=Dpkg)
        _pin(db, found, None if one.version == newest else one.version, now)
        reshow(db, source_id, found.package)
        facts: dict[str, object] = {"version": one.version, "previous": before.served}
        if rollback:
            facts["rollback"] = True
        changed(db, found, actor, PackageVersionReleased, facts, now)
        return _read(db, found)


def withdraw(
    engine: Engine,
    source_id: int,
    package: str,
    version: str,
    *,
    reshow: Reshow,
    actor: str,
    now: int,
) -> Versions:
    """Take ``version`` out of the indexes; the package goes on serving its newest listed
    version (below the pin, when the pin itself is withdrawn). The last listed version is
    not withdrawn: the package would have nothing to serve (set it offline instead)."""
    with write_transaction(engine) as db:
        found = owned(db, source_id, package)
        before = _read(db, found)
        one = _known(before, version)
        if one.withdrawn:
            raise ShopRefused("version", f"{one.version} is withdrawn already", "conflict")
        if [o.version for o in before.versions if o.listed] == [one.version]:
            raise ShopRefused(
                "version",
                f"{one.version} is the only version served; set the package offline instead",
                "conflict",
            )
        _version_row(db, found, one.version, now)
        v = t.package_versions
        db.execute(
            update(v)
            .where(v.c.package_id == found.id, v.c.version == one.version)
            .values(withdrawn_at=now, updated_at=now)
        )
        withdrawn, pin = listing(db, found.id)
        if pin == one.version:
            older = [
                o.version
                for o in before.versions
                if o.version not in withdrawn and Dpkg(o.version) < Dpkg(one.version)
            ]
            _pin(db, found, max(older, key=Dpkg) if older else None, now)
        reshow(db, source_id, found.package)
        after = _read(db, found)
        facts = {"version": one.version, "served": after.served}
        changed(db, found, actor, PackageVersionWithdrawn, facts, now)
        return after
