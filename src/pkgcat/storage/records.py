"""A catalogue record: one (package, version, architecture) row of ``package_records``.

Imports (:mod:`pkgcat.ingest.control`) and publishing (:mod:`pkgcat.repository.debs`) make
records; :mod:`pkgcat.storage.writes` writes them, column for field.
"""

from __future__ import annotations

from typing import NamedTuple


class Record(NamedTuple):
    """One (package, version, architecture) record: the columns of ``package_records``."""

    package: str
    version: str
    architecture: str
    name: str
    author: str
    maintainer: str
    section: str
    description: str
    long_description: str
    pre_depends: str
    depends: str
    conflicts: str
    replaces: str
    relations: str
    size: int
    md5sum: str
    sha256: str
    filename: str
    tag: str
    compatible: str
    commercial: bool
    icon: str
    url: str
    depiction: str
    screenshots: str


RECORD_COLUMNS: tuple[str, ...] = Record._fields
