"""Which of a package's records details shows: the newest version, then the preferred architecture.

Versions compare by dpkg's rules (epochs, ``~`` sorting before everything,
Debian revisions) through python-debian's :class:`debian.debian_support.Version`.
Among the records of the newest version, the architecture that comes first in
``PKGCAT_ARCHITECTURES`` wins; architectures not in that list come after the
listed ones, in alphabetical order.
"""

from __future__ import annotations

from collections.abc import Sequence

from debian.debian_support import Version


class Preference:
    """An order of architectures, most preferred first."""

    def __init__(self, architectures: Sequence[str]) -> None:
        self.architectures = tuple(architectures)
        self._rank = {name: index for index, name in enumerate(self.architectures)}

    def rank(self, architecture: str) -> tuple[int, str]:
        """Sort key: listed architectures in their order, then the others by name."""
        return self._rank.get(architecture, len(self._rank)), architecture


def best(records: Sequence[tuple[str, str]], preference: Preference) -> tuple[str, str]:
    """The (version, architecture) details shows among a package's records (never empty)."""
    if len(records) == 1:
        return records[0]
    newest = max(Version(version) for version, _ in records)
    # Equal versions may be spelt differently ("1.0" and "1.00"): the spelling breaks the tie.
    tied = [(v, a) for v, a in records if Version(v) == newest]
    return min(tied, key=lambda record: (preference.rank(record[1]), record[0]))
