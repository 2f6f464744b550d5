"""Debian relation fields, read into :class:`Relations` (Debian Policy 7.1, deb-control(5)).

The syntax is ``name[:qualifier] [(op version)] [[arch ...]]``, alternatives
separated by ``|``, groups by ``,``. The deprecated operators ``<`` and ``>``
mean ``<=`` and ``>=`` (Policy 7.1) and are read as such. A part that does not
follow the syntax is kept whole as a name, so a strange field never makes the
whole record unreadable; the raw text stays beside the parsed form.
"""

from __future__ import annotations

import re

from pkgcat.client._models import Operator, Relation, Relations

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
