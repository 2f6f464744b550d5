"""Why an import stops: every error names the file or address at fault and what is wrong.

::

    IngestError (ValueError)        an import that cannot be carried out; nothing was written
     ├── FetchError                 LOCATION, or a file in it, cannot be read
     ├── ReleaseError               a Release or InRelease file cannot be understood
     ├── CompressionError           an index is not valid data of its compression format
     ├── LimitError                 a file past a cap (PKGCAT_FETCH_MAX_BYTES, PKGCAT_INDEX_MAX_BYTES...)
     └── VerificationError          an index differs from the size or hashes its Release lists
    OperatorDataError (ValueError)  a purchases, stats or prices file with errors (``problems``)

A record of an index that cannot be used is not an error: the import skips it
and reports why (see :class:`pkgcat.ingest.load.Skip`).
"""

from __future__ import annotations


class IngestError(ValueError):
    """An import that cannot be carried out; the message says why."""


class FetchError(IngestError):
    """LOCATION, or a file in it, cannot be read."""


class ReleaseError(IngestError):
    """A Release or InRelease file that cannot be understood."""


class CompressionError(IngestError):
    """An index that is not valid data of the compression its name announces."""


class LimitError(IngestError):
    """A file past one of the caps, or a fetch past its deadline; the message names the setting."""


class VerificationError(IngestError):
    """An index whose size or hash differs from what its Release lists."""


class OperatorDataError(ValueError):
    """A file of operator data with errors; ``problems`` lists each as ``line N: field: ...``."""

    def __init__(self, path: str, problems: list[str]) -> None:
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        super().__init__(f"{path}: {count}, nothing was imported")
        self.path = path
        self.problems = problems
