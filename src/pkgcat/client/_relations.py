"""Debian relation fields: :class:`Relations`, and their reading (Debian Policy 7.1,
deb-control(5)).

The syntax is ``name[:qualifier] [(op version)] [[arch ...]]``, alternatives
separated by ``|``, groups by ``,``. The deprecated operators ``<`` and ``>``
mean ``<=`` and ``>=`` (Policy 7.1) and are read as such. A part that does not
follow the syntax is kept whole as a name, so a strange field never makes the
whole record unreadable; the raw text stays beside the parsed form.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

Operator = Literal["<<", "<=", "=", ">=", ">>"]
"""A version constraint's operator (Debian Policy 7.1)."""


@dataclass(frozen=True, slots=True)
class Relation:
    """One package a relation field names, with its optional constraints.

    ``name (>= 1.0) [arm64]`` reads as ``Relation("name", ">=", "1.0", ("arm64",))``.
    A part that does not follow the syntax is kept whole in ``name``.
    """

    name: str
    operator: Operator | None = None
    version: str | None = None
    architectures: tuple[str, ...] = ()
    """Architecture restriction, as written (``!`` marks an exclusion)."""
    arch_qualifier: str | None = None
    """What follows ``:`` after the name (``any``, ``native`` or an architecture)."""


@dataclass(frozen=True, slots=True)
class Relations:
    """A relation field (``depends``, ``pre-depends``, ``conflicts``, ``replaces``).

    ``groups`` is the comma-separated list; each group holds its ``|`` alternatives.
    An empty field has no groups. ``raw`` is the field exactly as the server sent it.
    """

    raw: str
    groups: tuple[tuple[Relation, ...], ...]

    def __iter__(self) -> Iterator[tuple[Relation, ...]]:
        return iter(self.groups)

    def __len__(self) -> int:
        return len(self.groups)

    @property
    def names(self) -> tuple[str, ...]:
        """Every package named, alternatives included, in order."""
        return tuple(r.name for group in self.groups for r in group)


_ALTERNATIVE = re.compile(
    r"""
    (?P<name>[^\s:()\[\]<>|,]+)
    (?::(?P<qualifier>[^\s()\[\]<>|,]+))?
    \s*
    (?:\(\s*(?P<operator><<|<=|>=|>>|=|<|>)\s*(?P<version>[^\s()]+)\s*\))?
    \s*
    (?:\[\s*(?P<architectures>[^\[\]]*?)\s*\])?
    """,
    re.VERBOSE,
)

_OPERATORS: dict[str, Operator] = {
    "<<": "<<",
    "<=": "<=",
    "=": "=",
    ">=": ">=",
    ">>": ">>",
    "<": "<=",
    ">": ">=",
}


def _alternative(text: str) -> Relation:
    match = _ALTERNATIVE.fullmatch(text)
    if match is None:
        return Relation(name=text)
    operator = match["operator"]
    return Relation(
        name=match["name"],
        operator=_OPERATORS[operator] if operator else None,
        version=match["version"],
        architectures=tuple((match["architectures"] or "").split()),
        arch_qualifier=match["qualifier"],
    )


def parse_relations(raw: str) -> Relations:
    """Read a relation field; an empty or blank field has no groups."""
    groups: list[tuple[Relation, ...]] = []
    for part in raw.split(","):
        alternatives = tuple(_alternative(a.strip()) for a in part.split("|") if a.strip())
        if alternatives:
            groups.append(alternatives)
    return Relations(raw=raw, groups=tuple(groups))
