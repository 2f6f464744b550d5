"""The operator's checks of the catalogue: what data from before a rule may still hold.

apt matches package names without regard to letter case, so two package rows
whose ids differ only in case are one package to a device, and an upgrade of one
may install the other's file. Uploads and imports no longer make such rows (the
unique index of migration 0011), but imports and uploads of before may have:
:func:`case_twins` finds them, for ``pkgcat check package-ids``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, func, select

from pkgcat.storage import schema as t


@dataclass(frozen=True, slots=True)
class CaseTwin:
    """A package row whose id differs only in case from another row's."""

    folded: str
    """The id in lower case: what apt takes it for."""
    package: str
    source: str
    online: bool
    files: int
    """Its stored .deb files (the served repository lists those of online packages)."""
    kept: bool
    """The oldest row of its id: the one the unique index holds (the others came before it)."""


def case_twins(engine: Engine) -> list[CaseTwin]:
    """Every package row whose id differs only in case from another's, by id then age."""
    p, s, d = t.packages, t.sources, t.deb_files
    folded = func.lower(p.c.package)
    shared = select(folded).group_by(folded).having(func.count() > 1).scalar_subquery()
    files = (
        select(func.count())
        .where(d.c.package == p.c.package, d.c.source_id == p.c.source_id)
        .scalar_subquery()
    )
    query = (
        select(folded.label("folded"), p.c.package, s.c.name, p.c.online, files, p.c.case_twin)
        .join(s, s.c.id == p.c.source_id)
        .where(folded.in_(shared))
        .order_by(folded, p.c.id)
    )
    with engine.connect() as db:
        return [
            CaseTwin(row[0], row[1], row[2], bool(row[3]), int(row[4]), row[5] == 0)
            for row in db.execute(query)
        ]
