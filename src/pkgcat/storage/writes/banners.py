"""The banners of ``sileo-featured.json`` (migration 0012): set by the operator, per source.

A banner opens one package of its source; its image and title are checked before they come
here (:mod:`pkgcat.repository.featured`). A banner of a package that already has one replaces
it, keeping its place. Every change moves the catalogue generation (the table's triggers), so
every worker's indexes follow.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, delete, func, insert, select, update
from sqlalchemy.engine import Connection

from pkgcat.storage import schema as t
from pkgcat.storage.engine import write_transaction


class BannerRefused(ValueError):
    """A banner that cannot be set; the message names what is wrong."""


@dataclass(frozen=True, slots=True)
class Banner:
    source: str
    package: str
    image_url: str
    title: str
    position: int


def _source_id(db: Connection, source: str) -> int:
    found = db.execute(select(t.sources.c.id).where(t.sources.c.name == source)).scalar()
    if found is None:
        raise BannerRefused(f"no source named {source!r}")
    return int(found)


def set_banner(
    engine: Engine, source: str, package: str, image_url: str, title: str, *, now: int
) -> Banner:
    """Add the package's banner to its source's row (or replace it, in its place); the image
    and title as :func:`pkgcat.repository.featured.checked` made them."""
    b, p = t.featured_banners, t.packages
    with write_transaction(engine) as db:
        source_id = _source_id(db, source)
        owned = db.execute(
            select(p.c.id).where(p.c.source_id == source_id, p.c.package == package)
        ).scalar()
        if owned is None:
            raise BannerRefused(f"source {source!r} has no package {package!r}")
        kept = db.execute(
            select(b.c.position).where(b.c.source_id == source_id, b.c.package == package)
        ).scalar()
        if kept is not None:
            db.execute(
                update(b)
                .where(b.c.source_id == source_id, b.c.package == package)
                .values(image_url=image_url, title=title)
            )
            return Banner(source, package, image_url, title, int(kept))
        last = db.execute(select(func.max(b.c.position)).where(b.c.source_id == source_id)).scalar()
        position = 1 if last is None else int(last) + 1
        db.execute(
            insert(b).values(
                source_id=source_id,
                package=package,
                image_url=image_url,
                title=title,
                position=position,
                created_at=now,
            )
        )
    return Banner(source, package, image_url, title, position)


def remove_banner(engine: Engine, source: str, package: str) -> None:
    b = t.featured_banners
    with write_transaction(engine) as db:
        source_id = _source_id(db, source)
        gone = db.execute(
            delete(b).where(b.c.source_id == source_id, b.c.package == package)
        ).rowcount
        if not gone:
            raise BannerRefused(f"source {source!r} has no banner of {package!r}")


def list_banners(engine: Engine, source: str | None = None) -> list[Banner]:
    """Every banner (or one source's), by source and place."""
    b, s = t.featured_banners, t.sources
    query = (
        select(s.c.name, b.c.package, b.c.image_url, b.c.title, b.c.position)
        .join(s, s.c.id == b.c.source_id)
        .order_by(s.c.name, b.c.position)
    )
    if source is not None:
        query = query.where(s.c.name == source)
    with engine.connect() as db:
        return [Banner(*row) for row in db.execute(query)]
