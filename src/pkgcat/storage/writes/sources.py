"""Sources: the one rule for creating and updating them, whoever asks.

``pkgcat source add`` (:meth:`pkgcat.storage.admin.CatalogueAdmin.add_source`)
and ``pkgcat import-repo`` (:mod:`pkgcat.storage.writes.imports`) both come
here: a source has a non-empty name that no other source has, and its url is
an absolute http(s) address, because the API serves it as a link and an import
resolves the index's relative addresses against it.

The functions run inside the caller's transaction.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection

from pkgcat.domain import Source
from pkgcat.storage import schema as t


class AdminError(ValueError):
    """An operator request that cannot be carried out; the message says why."""


def check_address(url: str, what: str) -> None:
    """Refuse anything but an absolute http(s) address: the API serves them as links."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise AdminError(f"{what}: {url!r} is not an http:// or https:// address")


def check_name(name: str) -> None:
    """Refuse a name that is empty or only blanks: commands name the source by it."""
    if not name.strip():
        raise AdminError("a source needs a name")


def add_source(
    db: Connection,
    name: str,
    url: str,
    *,
    now: int,
    origin: str = "",
    label: str = "",
    what: str = "--url",
) -> Source:
    """Create the source ``name``; :class:`AdminError` if it breaks the rule or exists already.

    ``what`` names where the url came from in the error message.
    """
    check_name(name)
    check_address(url, what)
    s = t.sources
    if db.execute(select(s.c.id).where(s.c.name == name)).first():
        raise AdminError(f"source {name!r} exists already")
    new_id = db.execute(
        insert(s).values(name=name, url=url, origin=origin, label=label, created_at=now)
    ).inserted_primary_key
    assert new_id is not None
    return Source(id=new_id[0], name=name, origin=origin, url=url)


def update_source(
    db: Connection,
    source_id: int,
    *,
    url: str | None = None,
    origin: str | None = None,
    label: str | None = None,
) -> None:
    """Set the given fields of a source; a new url must be an http(s) address too."""
    changes: dict[str, str] = {}
    if url is not None:
        check_address(url, "--url")
        changes["url"] = url
    if origin is not None:
        changes["origin"] = origin
    if label is not None:
        changes["label"] = label
    if changes:
        db.execute(update(t.sources).where(t.sources.c.id == source_id).values(**changes))
