"""Release and InRelease files: the repository's name and the size and hashes of its indexes.

Parsed with python-debian's :class:`debian.deb822.Release`, which also strips
the OpenPGP armour of an InRelease file. The signature itself is not checked
(that needs the repository's key, which pkgcat does not hold); the hashes are.
An index is checked like APT checks it: its size, and the strongest hash the
Release lists for it (SHA512, then SHA256, SHA1, MD5Sum).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

from debian.deb822 import Release as Deb822Release

from pkgcat.ingest.errors import ReleaseError, VerificationError
from pkgcat.ingest.text import control_in_line

HASHES: tuple[tuple[str, str], ...] = (
    ("SHA512", "sha512"),
    ("SHA256", "sha256"),
    ("SHA1", "sha1"),
    ("MD5Sum", "md5"),
)
"""Release hash sections, strongest first, with their :mod:`hashlib` names."""
_ENTRY_KEY = {"SHA512": "sha512", "SHA256": "sha256", "SHA1": "sha1", "MD5Sum": "md5sum"}
"""The key python-debian gives each section's hash under."""

_HEX = re.compile(r"[0-9a-fA-F]+")


@dataclass(frozen=True, slots=True)
class Listed:
    """What a Release says of one file: its size and its hashes by hashlib name."""

    size: int
    hashes: dict[str, str]


@dataclass(frozen=True, slots=True)
class Release:
    """The parts of a Release file an import uses."""

    name: str
    """Where it was read, for messages (``Release``, ``dists/stable/InRelease``)."""
    origin: str = ""
    label: str = ""
    suite: str = ""
    date: int | None = None
    """``Date`` as unix seconds, when present and valid."""
    architectures: tuple[str, ...] = ()
    components: tuple[str, ...] = ()
    files: dict[str, Listed] = field(default_factory=dict)
    """Listed files by path relative to the Release's directory."""
    warnings: tuple[str, ...] = ()
    """Fields left unused, and why."""

    def verify(self, path: str, data: bytes) -> str:
        """Check ``data`` against the entry for ``path``; the hash used, or ``""`` if none.

        Raises :class:`VerificationError` naming the size or hash that differs.
        """
        listed = self.files.get(path)
        if listed is None:
            return ""
        problems: list[str] = []
        if len(data) != listed.size:
            problems.append(f"size {len(data)} bytes, {self.name} lists {listed.size}")
        for section, algorithm in HASHES:
            expected = listed.hashes.get(algorithm)
            if expected is None:
                continue
            actual = hashlib.new(algorithm, data).hexdigest()
            if actual != expected:
                problems.append(f"{section} {actual[:16]}..., {self.name} lists {expected[:16]}...")
            if not problems:
                return section
            break
        raise VerificationError(
            f"{path} does not match {self.name}: {'; '.join(problems)}; "
            "the index is damaged, cut short or not the one the Release describes"
        )


def _words(paragraph: Deb822Release, *names: str) -> tuple[str, ...]:
    for name in names:
        value = paragraph.get(name)
        if value:
            return tuple(str(value).split())
    return ()


def _date(value: str | None) -> int | None:
    if not value:
        return None
    try:
        return int(parsedate_to_datetime(value).timestamp())
    except (TypeError, ValueError, IndexError):
        return None


def _files(name: str, paragraph: Deb822Release) -> dict[str, Listed]:
    sizes: dict[str, int] = {}
    hashes: dict[str, dict[str, str]] = {}
    for section, algorithm in HASHES:
        if section not in paragraph:
            continue
        try:
            entries = paragraph[section]
        except (ValueError, KeyError) as error:
            raise ReleaseError(f"{name}: {section} is malformed ({error})") from None
        for entry in entries:
            path, size = entry.get("name"), entry.get("size", "")
            digest = entry.get(_ENTRY_KEY[section], "")
            if not path or not size.isdigit() or not _HEX.fullmatch(digest):
                raise ReleaseError(
                    f"{name}: {section} line for {path or '?'!r} is not 'HASH SIZE NAME'"
                )
            if sizes.setdefault(path, int(size)) != int(size):
                raise ReleaseError(f"{name}: {path} is listed with two different sizes")
            hashes.setdefault(path, {})[algorithm] = digest.lower()
    return {path: Listed(size=sizes[path], hashes=hashes[path]) for path in sizes}


def parse_release(name: str, data: bytes) -> Release:
    """Parse a Release or InRelease file read from ``name``."""
    try:
        paragraph = Deb822Release(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise ReleaseError(f"{name}: not a Release file ({error})") from None
    if not paragraph:
        raise ReleaseError(f"{name}: empty, or not a Release file")
    warnings: list[str] = []

    def text(field_name: str) -> str:
        value = str(paragraph.get(field_name, "")).strip()
        control = control_in_line(value)
        if control is None:
            return value
        warnings.append(f"{name}: {field_name} holds the control character {control}; not used")
        return ""

    return Release(
        name=name,
        origin=text("Origin"),
        label=text("Label"),
        suite=text("Suite"),
        date=_date(paragraph.get("Date")),
        # "Architecture" (singular) is a common misspelling in jailbreak repositories.
        architectures=_words(paragraph, "Architectures", "Architecture"),
        components=_words(paragraph, "Components"),
        files=_files(name, paragraph),
        warnings=tuple(warnings),
    )
