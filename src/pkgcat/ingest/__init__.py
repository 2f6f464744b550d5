"""Catalogue ingestion: APT repositories in, and the operator's purchases, statistics and prices.

:func:`import_repository` reads a repository (local or http(s)), checks its
index against its Release, parses it and reads its depictions, then writes the
changes in short transactions (:mod:`pkgcat.storage.writes.imports`). The
operator-data functions of :mod:`pkgcat.ingest.operator_data` validate a whole
CSV or JSON Lines file before :mod:`pkgcat.storage.writes.operator` writes any of it.
"""

from pkgcat.ingest.depictions import DEPICTION_MODES, DepictionMode
from pkgcat.ingest.errors import (
    CompressionError,
    FetchError,
    IngestError,
    LimitError,
    OperatorDataError,
    ReleaseError,
    VerificationError,
)
from pkgcat.ingest.load import Outcome, Skipped
from pkgcat.ingest.pipeline import ImportOptions, ImportSummary, import_repository
from pkgcat.ingest.repository import Selection

__all__ = [
    "DEPICTION_MODES",
    "CompressionError",
    "DepictionMode",
    "FetchError",
    "ImportOptions",
    "ImportSummary",
    "IngestError",
    "LimitError",
    "OperatorDataError",
    "Outcome",
    "ReleaseError",
    "Selection",
    "Skipped",
    "VerificationError",
    "import_repository",
]
