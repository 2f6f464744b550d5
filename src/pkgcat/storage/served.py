"""What the served repository reads from the catalogue, and the spent download grants.

One read builds every index: the stored .deb files of online packages, with
their package's catalogue fields (for the paid rule and the depictions), in
one snapshot. Not a seam of the request path: the indexes are rebuilt off it,
in a thread, through SQLAlchemy Core (the same statements on both databases).

A package whose id differs only in letter case from an older package's (a row
migration 0011 found, ``case_twin`` not 0) is left out: apt takes both for one
package, so the older one's files alone are listed, and no later source's file
can pass for an upgrade of them (``pkgcat check package-ids`` lists such rows).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from decimal import Decimal

from debian.debian_support import Version
from sqlalchemy import Engine, delete, func, insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from pkgcat.shop.values import Page, Sale
from pkgcat.storage import schema as t
from pkgcat.storage.shop.pages import page_from_row


@dataclass(frozen=True, slots=True)
class ServedFile:
    """A stored .deb of an online package, with what its indexes and depiction show."""

    sha256: str
    source: str
    package: str
    version: str
    architecture: str
    size: int
    md5sum: str
    sha1: str
    sha512: str
    control: str
    stored_at: int
    paid: bool
    """Not free by the catalogue's rule (:attr:`pkgcat.domain.Package.is_free`)."""
    name: str
    description: str
    long_description: str
    author: str
    section: str
    shown_version: str
    """The version details shows (the package's best record)."""
    price: str | None
    currency: str
    screenshots: str
    updated_at: int
    icon: str = ""
    """The catalogue's icon address (the file's own ``Icon`` field comes first)."""
    hidden: bool = False
    """Withdrawn, or newer than the version its seller rolled back to: in no index, and
    served only through a download URL (kept for buyers who own the package)."""


@dataclass(frozen=True, slots=True)
class ShopView:
    """What a package's seller set beyond its row, as the indexes and depictions show it."""

    page: Page | None = None
    changelogs: tuple[tuple[str, str], ...] = ()
    """(version, changelog) of its listed versions that have one, newest first."""
    sale: Sale | None = None
    """Its sale, when one is running or to come."""


def _paid(price: str | None, commercial: bool) -> bool:
    """Free is a known price of zero, or no price and not tagged commercial (``Package.is_free``)."""
    return bool(commercial) if price is None else Decimal(price) != 0


@dataclass(frozen=True, slots=True)
class Snapshot:
    generation: int
    files: list[ServedFile]
    keys_changed: int
    """The latest creation or retirement of a signing key (0: none)."""
    began: int = 0
    """When the catalogue's first source was made (0: it has none): the date of an empty
    repository, which has no change of its own to be dated by."""
    banners: tuple[tuple[str, str, str, str], ...] = ()
    """The featured banners, by source and place: (source, package, image address, title)."""
    shops: dict[str, ShopView] = field(default_factory=dict)
    """By package: what its seller set (only packages with something set)."""
    media: frozenset[str] = frozenset()
    """The uploaded images the pages name (``DIGEST.png``), served under ``/repo/media/``."""


def read_served(engine: Engine, now: int | None = None) -> Snapshot:
    """Every served file, by package, version and architecture, and the generation, in one
    snapshot; ``now``: the time sales are read at (their windows to come or running)."""
    now = int(time.time()) if now is None else now
    d, p, s, k = t.deb_files, t.packages, t.sources, t.repository_keys
    v, g = t.package_versions, t.package_pages
    # Few packages have withdrawn versions or a pin: read apart, not joined to every file.
    withdrawn_q = (
        select(p.c.package, v.c.version)
        .join(p, p.c.id == v.c.package_id)
        .where(v.c.withdrawn_at.is_not(None))
    )
    pins_q = (
        select(p.c.package, g.c.served_version)
        .join(p, p.c.id == g.c.package_id)
        .where(g.c.served_version.is_not(None))
    )
    query = (
        select(
            d.c.sha256,
            s.c.name.label("source"),
            d.c.package,
            d.c.version,
            d.c.architecture,
            d.c.size,
            d.c.md5sum,
            d.c.sha1,
            d.c.sha512,
            d.c.control,
            d.c.stored_at,
            p.c.price,
            p.c.commercial,
            p.c.name,
            p.c.description,
            p.c.long_description,
            p.c.author,
            p.c.section,
            p.c.version.label("shown_version"),
            p.c.currency,
            p.c.screenshots,
            p.c.updated_at,
            p.c.icon,
        )
        .join(p, (p.c.package == d.c.package) & (p.c.source_id == d.c.source_id))
        .join(s, s.c.id == d.c.source_id)
        .where(p.c.online.is_(True), p.c.case_twin == 0)
        .order_by(d.c.package, d.c.version, d.c.architecture)
    )
    with engine.connect() as db, db.begin():
        generation = db.execute(select(t.catalogue_generation.c.value)).scalar_one()
        rows = db.execute(query).all()
        keys_changed = db.execute(
            select(func.max(func.coalesce(k.c.retired_at, k.c.created_at)))
        ).scalar()
        began = db.execute(select(func.min(s.c.created_at))).scalar()
        b = t.featured_banners
        banners = db.execute(
            select(s.c.name, b.c.package, b.c.image_url, b.c.title)
            .join(s, s.c.id == b.c.source_id)
            .order_by(s.c.name, b.c.position)
        ).all()
        shops = _shops(db, now)
        withdrawn = {(row[0], row[1]) for row in db.execute(withdrawn_q)}
        pins = {row[0]: Version(row[1]) for row in db.execute(pins_q)}
    files = [
        ServedFile(
            sha256=row.sha256,
            source=row.source,
            package=row.package,
            version=row.version,
            architecture=row.architecture,
            size=row.size,
            md5sum=row.md5sum,
            sha1=row.sha1,
            sha512=row.sha512,
            control=row.control,
            stored_at=row.stored_at,
            paid=_paid(row.price, row.commercial),
            name=row.name,
            description=row.description,
            long_description=row.long_description,
            author=row.author,
            section=row.section,
            shown_version=row.shown_version,
            price=row.price,
            currency=row.currency,
            screenshots=row.screenshots,
            updated_at=row.updated_at,
            icon=row.icon,
            hidden=bool(withdrawn or pins) and _hidden(row.package, row.version, withdrawn, pins),
        )
        for row in rows
    ]
    return Snapshot(
        int(generation),
        files,
        int(keys_changed or 0),
        int(began or 0),
        tuple((row[0], row[1], row[2], row[3]) for row in banners),
        shops,
        frozenset(
            name
            for view in shops.values()
            if view.page is not None
            for name in (view.page.icon, view.page.header, *view.page.screenshots)
            if name
        ),
    )


def _hidden(
    package: str, version: str, withdrawn: set[tuple[str, str]], pins: dict[str, Version]
) -> bool:
    """Withdrawn, or newer than the version its seller rolled back to."""
    if (package, version) in withdrawn:
        return True
    pin = pins.get(package)
    return pin is not None and Version(version) > pin


def _shops(db: Connection, now: int) -> dict[str, ShopView]:
    """What sellers set beyond the package rows, by package (a few rows: most have none)."""
    g, v, sales, p = t.package_pages, t.package_versions, t.package_sales, t.packages
    pages = {
        row.package: page_from_row(row.package, row)
        for row in db.execute(select(g, p.c.package).join(p, p.c.id == g.c.package_id))
    }
    notes: dict[str, list[tuple[str, str]]] = {}
    for row in db.execute(
        select(p.c.package, v.c.version, v.c.changelog)
        .join(p, p.c.id == v.c.package_id)
        .where(v.c.changelog != "", v.c.withdrawn_at.is_(None))
    ):
        notes.setdefault(row.package, []).append((row.version, row.changelog))
    running = {
        row.package: Sale(row.package, row.price, row.currency, row.starts_at, row.ends_at)
        for row in db.execute(
            select(p.c.package, p.c.currency, sales.c.price, sales.c.starts_at, sales.c.ends_at)
            .join(p, p.c.id == sales.c.package_id)
            .where(sales.c.ends_at > now)
        )
    }
    shops = {}
    for package in pages.keys() | notes.keys() | running.keys():
        page = pages.get(package)
        pin = None if page is None else page.served_version
        listed = sorted(
            (
                (version, text)
                for version, text in notes.get(package, [])
                if pin is None or Version(version) <= Version(pin)
            ),
            key=lambda one: Version(one[0]),
            reverse=True,
        )
        shops[package] = ShopView(page, tuple(listed), running.get(package))
    return shops


def claim_grant(
    engine: Engine, grant_id: str, claim_id: str, done_id: str, expires_at: int, now: int
) -> str:
    """Claim a download grant for one client: ``"first"``, ``"again"`` or ``"spent"``.

    ``"first"``: no process had it; its row and the client's claim row are inserted in one
    transaction. The primary key decides: of two requests with the same grant, on any
    worker or host, exactly one inserts the row. ``"again"``: the client that claimed it
    (``claim_id``, see :meth:`pkgcat.repository.grants.Grants.claim_id`) asks again
    (a resume) and its file has not gone out whole (no ``done_id`` row). ``"spent"``:
    claimed by another client, or done. Grants expired for a day are purged on the way,
    so the table holds about a day of downloads of paid packages.
    """
    g = t.download_grants
    try:
        with engine.begin() as db:
            db.execute(insert(g).values(grant_id=grant_id, expires_at=expires_at))
            db.execute(insert(g).values(grant_id=claim_id, expires_at=expires_at))
            db.execute(delete(g).where(g.c.expires_at < now - 86_400))
    except IntegrityError:
        # Claimed already: the claim committed with its grant's row, so it is seen here.
        return "again" if peek_grant(engine, grant_id, claim_id, done_id) == "again" else "spent"
    return "first"


def peek_grant(engine: Engine, grant_id: str, claim_id: str, done_id: str) -> str:
    """What :func:`claim_grant` would say, without claiming: ``"first"``, ``"again"`` or
    ``"spent"`` (a ``HEAD`` of a download URL asks this)."""
    g = t.download_grants
    with engine.connect() as db:
        rows = set(
            db.execute(
                select(g.c.grant_id).where(g.c.grant_id.in_([grant_id, claim_id, done_id]))
            ).scalars()
        )
    if grant_id not in rows:
        return "first"
    return "again" if claim_id in rows and done_id not in rows else "spent"


def finish_grant(engine: Engine, done_id: str, expires_at: int) -> bool:
    """Mark a grant's file as gone out whole; False when a request marked it first."""
    g = t.download_grants
    try:
        with engine.begin() as db:
            db.execute(insert(g).values(grant_id=done_id, expires_at=expires_at))
    except IntegrityError:
        return False
    return True


def unfinish_grant(engine: Engine, done_id: str) -> None:
    """Take the mark back: the download it was for could not be counted or sent."""
    g = t.download_grants
    with engine.begin() as db:
        db.execute(delete(g).where(g.c.grant_id == done_id))
