"""Use cases of a package's versions: list them, set a changelog, release, roll back, withdraw.

A withdrawn version leaves the indexes but is kept for the buyers who own the package: the
store still makes them a download URL of it (docs/repository.md, "Versions").
"""

from __future__ import annotations

from sqlalchemy import Engine
from sqlalchemy.engine import Connection

from pkgcat.ingest.rendered import text_problem
from pkgcat.shop.errors import ShopRefused
from pkgcat.shop.values import Version, Versions
from pkgcat.storage.shop import versions as stored
from pkgcat.storage.writes.published import reshow
from pkgcat.versions import Preference

CHANGELOG_MAX = 20_000


def _reshow(preference: Preference, now: int) -> stored.Reshow:
    def again(db: Connection, source_id: int, package: str) -> None:
        reshow(db, source_id, package, preference, now)

    return again


def versions(engine: Engine, source_id: int, package: str) -> Versions:
    return stored.read_versions(engine, source_id, package)


def set_changelog(
    engine: Engine, source_id: int, package: str, version: str, text: str, *, actor: str, now: int
) -> Version:
    text = text.strip().replace("\r\n", "\n")
    if len(text) > CHANGELOG_MAX:
        raise ShopRefused("changelog", f"is {len(text)} characters; at most {CHANGELOG_MAX}")
    if (problem := text_problem(text)) is not None:
        raise ShopRefused("changelog", problem)
    return stored.set_changelog(engine, source_id, package, version, text, actor=actor, now=now)


def release(
    engine: Engine, source_id: int, package: str, version: str, *, preference: Preference,
    actor: str, now: int,
) -> Versions:  # fmt: skip
    """Serve ``version`` from now on (a withdrawn one comes back)."""
    return stored.release(
        engine, source_id, package, version, reshow=_reshow(preference, now), rollback=False,
        actor=actor, now=now,
    )  # fmt: skip


def roll_back(
    engine: Engine, source_id: int, package: str, version: str, *, preference: Preference,
    actor: str, now: int,
) -> Versions:  # fmt: skip
    """Serve an earlier ``version`` than the one served: the newer ones leave the indexes
    (kept, and released again by :func:`release` or a newer publish)."""
    return stored.release(
        engine, source_id, package, version, reshow=_reshow(preference, now), rollback=True,
        actor=actor, now=now,
    )  # fmt: skip


def withdraw(
    engine: Engine, source_id: int, package: str, version: str, *, preference: Preference,
    actor: str, now: int,
) -> Versions:  # fmt: skip
    return stored.withdraw(
        engine, source_id, package, version, reshow=_reshow(preference, now), actor=actor,
        now=now,
    )  # fmt: skip
