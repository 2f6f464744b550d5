"""The caps and deadlines of one import, and the setting that names each.

A repository is someone else's data: every file, stanza and depiction it hands
over is bounded. A file or index past its cap stops the import (nothing is
written, the error names the file and the setting); a stanza or a depiction
past its cap is skipped, or left without screenshots, with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from pkgcat import config
from pkgcat.net.addresses import Allowance
from pkgcat.net.fetcher import Limits, Policy


def fetch_policy(settings: config.Settings) -> Policy:
    """What every request of an import obeys: ``PKGCAT_FETCH_ALLOW`` and ``PKGCAT_FETCH_TIMEOUT``."""
    return Policy(allow=Allowance.parse(settings.fetch_allow), timeout=settings.fetch_timeout)


@dataclass(frozen=True, slots=True)
class ImportLimits:
    file_bytes: int = config.DEFAULT_FETCH_MAX_BYTES
    """A repository file (Release, an index) on the wire or on disk (``PKGCAT_FETCH_MAX_BYTES``)."""
    file_deadline: float = config.DEFAULT_FETCH_DEADLINE
    """Seconds the fetch of one repository file may take (``PKGCAT_FETCH_DEADLINE``)."""
    index_bytes: int = config.DEFAULT_INDEX_MAX_BYTES
    """An index once decompressed (``PKGCAT_INDEX_MAX_BYTES``)."""
    stanza_bytes: int = config.DEFAULT_STANZA_MAX_BYTES
    stanza_fields: int = config.DEFAULT_STANZA_MAX_FIELDS
    depiction_bytes: int = config.DEFAULT_DEPICTION_MAX_BYTES
    depiction_depth: int = config.DEFAULT_DEPICTION_MAX_DEPTH
    depiction_deadline: float = config.DEFAULT_DEPICTION_DEADLINE

    @classmethod
    def from_settings(cls, settings: config.Settings) -> ImportLimits:
        return cls(
            file_bytes=settings.fetch_max_bytes,
            file_deadline=settings.fetch_deadline,
            index_bytes=settings.index_max_bytes,
            stanza_bytes=settings.stanza_max_bytes,
            stanza_fields=settings.stanza_max_fields,
            depiction_bytes=settings.depiction_max_bytes,
            depiction_depth=settings.depiction_max_depth,
            depiction_deadline=settings.depiction_deadline,
        )

    @property
    def file(self) -> Budget:
        return Budget(
            Limits(self.file_bytes, self.file_deadline),
            "PKGCAT_FETCH_MAX_BYTES",
            "PKGCAT_FETCH_DEADLINE",
            anywhere=True,
        )

    @property
    def depiction(self) -> Budget:
        return Budget(
            Limits(self.depiction_bytes, self.depiction_deadline),
            "PKGCAT_DEPICTION_MAX_BYTES",
            "PKGCAT_DEPICTION_DEADLINE",
            anywhere=False,
        )


@dataclass(frozen=True, slots=True)
class Budget:
    """What one read may take, and the settings to name when it takes more."""

    limits: Limits
    size_setting: str
    deadline_setting: str
    anywhere: bool
    """Whether a redirect may lead out of the repository (its address is checked all the same)."""
