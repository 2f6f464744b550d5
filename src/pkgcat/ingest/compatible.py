"""``compatible`` labels and the paid flag, from a stanza's ``Tag`` and relations.

The labels are ``iOS N``, one per major iOS version the package supports, in
ascending order. The first of these that the stanza has decides them:

1. ``Tag: compatible_min::ios13.0`` and/or ``compatible_max::ios14.4`` (the
   ``ios`` prefix is optional): every major from the minimum to the maximum,
   both included. Without a maximum, up to the newest major in
   :data:`IOS_MAJORS`; without a minimum, from the oldest.
2. ``Tag: compatible::ios13`` (one major) or ``compatible::9.0-16.4`` (a range,
   ``ios`` optional on either end): the union of those majors.
3. ``firmware`` requirements of ``Pre-Depends`` and ``Depends``: only a
   relation on ``firmware`` itself that stands alone; one that is an
   alternative (``a | firmware (>= 15.0)`` or ``firmware (>= 14.0) | b``) is
   not a requirement and is ignored. Every operator spelling is read:
   ``(>= 14.0)``, ``>=11.0`` without parentheses, ``>>``, ``<<``, ``<=``, ``=``,
   and the obsolete ``<`` and ``>`` (meaning ``<=`` and ``>=``, as in dpkg).
   A major is covered when some version of it satisfies every requirement:
   ``firmware (<< 16.4)`` covers iOS 16, ``firmware (<< 18.0)`` does not cover 18.
4. Otherwise no label.

``Tag: cydia::commercial`` marks the package paid.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import orjson

IOS_MAJORS: tuple[int, ...] = (*range(1, 19), 26)
"""Every major iOS release: 1 to 18, then 26 (Apple's numbering jumped to the year in 2025).
An open-ended range stops at the last one; add a release here when Apple ships it."""

_NUMBER = re.compile(r"\s*(?:ios)?\s*(\d+(?:\.\d+)*)", re.IGNORECASE)
_RANGE = re.compile(r"\s*(?:ios)?\s*(\d+(?:\.\d+)*)\s*-\s*(?:ios)?\s*(\d+(?:\.\d+)*)\s*$", re.I)
_FIRMWARE = re.compile(
    r"^firmware(?::\w+)?\s*(?:\(\s*(<<|<=|>=|>>|=|<|>)\s*([^\s)]+)\s*\)|(<<|<=|>=|>>|=|<|>)\s*(\S+))?"
    r"\s*(?:\[[^\]]*\])?\s*$"
)
_OBSOLETE = {"<": "<=", ">": ">="}

Bound = tuple[str, tuple[int, ...]]
"""An operator (``>=``, ``>>``, ``<=``, ``<<``, ``=``) and a version as a tuple of numbers."""


@dataclass(frozen=True, slots=True)
class Compatibility:
    labels: tuple[str, ...]
    commercial: bool
    json: str
    """``labels`` as the JSON array the database stores."""


def _version(text: str) -> tuple[int, ...] | None:
    """``13.0``, ``ios14.4`` or ``14.0.0`` as numbers, trailing zeros dropped; else ``None``."""
    match = _NUMBER.match(text)
    if match is None:
        return None
    numbers = [int(part) for part in match.group(1).split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def _covers(major: int, bound: Bound) -> bool:
    """Whether some version ``major.x`` satisfies ``bound``."""
    operator, version = bound
    if operator in (">=", ">>"):
        return version[0] <= major
    if operator == "<=":
        return major <= version[0]
    if operator == "<<":
        return (major,) < version
    return version[0] == major


def _labels(majors: Iterable[int]) -> tuple[str, ...]:
    return tuple(f"iOS {major}" for major in sorted(set(majors)))


def _majors(bounds: list[Bound]) -> list[int]:
    return [major for major in IOS_MAJORS if all(_covers(major, bound) for bound in bounds)]


def _from_tags(tags: list[str]) -> tuple[str, ...] | None:
    bounds: list[Bound] = []
    majors: set[int] = set()
    listed = False
    for tag in tags:
        facet, _, value = tag.partition("::")
        facet = facet.lower()
        if facet in ("compatible_min", "compatible_max"):
            version = _version(value)
            if version is not None:
                bounds.append((">=" if facet == "compatible_min" else "<=", version))
        elif facet == "compatible":
            span = _RANGE.match(value)
            if span:
                low, high = _version(span.group(1)), _version(span.group(2))
                if low is not None and high is not None:
                    listed = True
                    majors.update(_majors([(">=", low), ("<=", high)]))
                continue
            version = _version(value)
            if version is not None:
                listed = True
                majors.add(version[0])
    if bounds:
        return _labels(_majors(bounds))
    if listed:
        return _labels(majors)
    return None


def _firmware_bounds(relations: str) -> list[Bound]:
    bounds: list[Bound] = []
    for group in relations.split(","):
        if "|" in group or "firmware" not in group:
            continue
        match = _FIRMWARE.match(group.strip())
        if match is None:
            continue
        operator = match.group(1) or match.group(3)
        version = _version(match.group(2) or match.group(4) or "")
        if operator and version is not None:
            bounds.append((_OBSOLETE.get(operator, operator), version))
    return bounds


def compatibility(tag: str, depends: str, pre_depends: str) -> Compatibility:
    """The labels and the paid flag of one stanza (see the module's rules)."""
    tags = [t.strip() for t in tag.split(",") if t.strip()] if tag else []
    commercial = any(t.lower() == "cydia::commercial" for t in tags)
    labels = _from_tags(tags) if tags else None
    if labels is None:
        bounds = _firmware_bounds(pre_depends) + _firmware_bounds(depends)
        labels = _labels(_majors(bounds)) if bounds else ()
    return Compatibility(labels=labels, commercial=commercial, json=orjson.dumps(labels).decode())
