"""A package's page as its seller sets it, over what its .deb (or its repository) says.

``package_pages`` holds the seller's values (NULL: the .deb's stands). The package row keeps
what details and the indexes read: its name, descriptions, section and compatible labels are
the page's where set, else its shown record's (:func:`apply_pages`, after every change of
either: a page edit, a publish, an import). The rest of the page (links, iOS versions,
images) is read by the index build beside the row (:mod:`pkgcat.storage.served`).
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import ColumnElement, Engine, func, select, update
from sqlalchemy.engine import Connection

from pkgcat.events import PackagePageChanged
from pkgcat.shop.values import Page
from pkgcat.storage import schema as t
from pkgcat.storage.engine import write_transaction
from pkgcat.storage.shop.log import changed, owned

SHOWN = ("name", "description", "long_description", "section", "compatible")
"""The page's fields the package row shows (details, the index build)."""
STORED = (
    *SHOWN, "min_ios", "max_ios", "support_url", "source_url", "icon", "header", "screenshots",
)  # fmt: skip
"""Every field of a page a seller sets (``served_version`` is the versions' business)."""


def _to_column(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in ("compatible", "screenshots"):
        return orjson.dumps(list(value)).decode()
    return value


def page_from_row(package: str, row: Any) -> Page:
    if row is None:
        return Page(package)
    values = {name: row._mapping[name] for name in (*STORED, "served_version")}
    compatible = values.pop("compatible")
    screenshots = values.pop("screenshots")
    return Page(
        package,
        compatible=None if compatible is None else tuple(orjson.loads(compatible)),
        screenshots=() if screenshots is None else tuple(orjson.loads(screenshots)),
        **values,
    )


def read_page(db: Connection, package_id: int, package: str) -> Page:
    g = t.package_pages
    row = db.execute(select(g).where(g.c.package_id == package_id)).first()
    return page_from_row(package, row)


def page(engine: Engine, source_id: int, package: str) -> Page:
    """What the seller has set of the package's page."""
    with engine.connect() as db:
        found = owned(db, source_id, package, lock=False)
        return read_page(db, found.id, found.package)


def ensure_row(db: Connection, package_id: int, source_id: int, now: int) -> None:
    """The package's page row, made empty when it has none (the caller holds the package)."""
    g = t.package_pages
    if db.execute(select(g.c.package_id).where(g.c.package_id == package_id)).first() is None:
        db.execute(g.insert().values(package_id=package_id, source_id=source_id, updated_at=now))


def set_page(
    engine: Engine,
    source_id: int,
    package: str,
    values: dict[str, Any],
    *,
    actor: str,
    now: int,
) -> Page:
    """Set the page's ``values`` (checked already: :mod:`pkgcat.shop.pages`; None clears a
    field back to the .deb's), in one transaction with its history line and event. Nothing
    is written when nothing changes."""
    assert set(values) <= set(STORED), set(values) - set(STORED)
    with write_transaction(engine) as db:
        found = owned(db, source_id, package)
        before = read_page(db, found.id, found.package)
        wanted = {
            name: (tuple(value) if isinstance(value, list | tuple) else value)
            for name, value in values.items()
        }
        if name_changes := {
            name: value for name, value in wanted.items() if getattr(before, name) != value
        }:
            ensure_row(db, found.id, source_id, now)
            g = t.package_pages
            db.execute(
                update(g)
                .where(g.c.package_id == found.id)
                .values(
                    {name: _to_column(name, value) for name, value in name_changes.items()}
                    | {"updated_at": now}
                )
            )
            apply_pages(db, g.c.package_id == found.id)
            shown = {
                name: list(value) if isinstance(value, tuple) else value
                for name, value in name_changes.items()
            }
            changed(db, found, actor, PackagePageChanged, {"fields": shown}, now)
        return read_page(db, found.id, found.package)


def apply_pages(db: Connection, which: ColumnElement[bool]) -> None:
    """The package rows of the pages ``which`` selects show each page's values where set,
    else their shown record's (as the last publish or import copied it)."""
    g, p, r = t.package_pages, t.packages, t.package_records
    ids = select(g.c.package_id).where(which)
    values = {
        name: func.coalesce(
            select(g.c[name]).where(g.c.package_id == p.c.id).scalar_subquery(),
            select(r.c[name]).where(r.c.id == p.c.record_id).scalar_subquery(),
            p.c[name],
        )
        for name in SHOWN
    }
    db.execute(update(p).where(p.c.id.in_(ids)).values(values))
