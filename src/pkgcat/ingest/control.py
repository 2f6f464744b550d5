"""Packages stanzas to catalogue records, through python-debian's deb822 parser.

An index is cut into stanzas at blank lines (deb822(5)); each stanza keeps its
line number and raw bytes, so an unchanged stanza can be recognised by its
fingerprint without being parsed again. :meth:`Mapper.map` parses one stanza
with python-debian's :class:`debian.deb822.Deb822` parser (see :class:`Stanza`;
field names are read without regard to case, so ``MD5Sum``/``MD5sum``,
``Sileodepiction``/``SileoDepiction`` and ``Pre-depends``/``Pre-Depends`` all
read the same) and maps its fields:

=====================  =======================================================
Record field           From the stanza
=====================  =======================================================
package, version,      ``Package``, ``Version``, ``Architecture`` (required)
architecture
name                   ``Name``, else ``Package``
author                 ``Author``, else ``Maintainer``
description            first line of ``Description``
long_description       its continuation lines, one leading space removed,
                       ``.`` lines as blank lines (deb-control(5))
pre_depends, depends,  raw text (folded lines joined), and parsed into
conflicts, replaces    ``relations`` with :class:`debian.deb822.PkgRelation`
size, md5sum, sha256   ``Size``, ``MD5sum`` (required), ``SHA256``
icon                   ``Icon``, resolved against the repository address
url                    ``Depiction``, else ``SileoDepiction``, else ``Homepage``
depiction              ``SileoDepiction`` (read later for screenshots)
compatible, commercial ``Tag`` and ``Depends`` (:mod:`pkgcat.ingest.compatible`)
=====================  =======================================================

The fields clients render follow :mod:`pkgcat.ingest.rendered`: an address that is
not a safe http(s) URL is left out (``""``), and ``Name``, ``Author``,
``Maintainer`` and ``Description`` lose HTML markup and Markdown links to
anything else (:func:`~pkgcat.ingest.rendered.neutral_text`).

A stanza that cannot make a record raises :class:`Skip` with the reason: among
them, a stanza over ``PKGCAT_STANZA_MAX_BYTES`` or ``PKGCAT_STANZA_MAX_FIELDS``,
and one holding a control character (:mod:`pkgcat.ingest.text`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urljoin

import orjson
from debian.deb822 import Deb822, PkgRelation
from debian.debian_support import Version

from pkgcat.ingest.compatible import Compatibility, compatibility
from pkgcat.ingest.limits import ImportLimits
from pkgcat.ingest.rendered import link_problem, neutral_text
from pkgcat.ingest.text import control_in_stanza
from pkgcat.storage.records import Record

_BLANK_LINES = re.compile(rb"\n(?:[ \t\r]*\n)+")
_LEADING_BLANK_LINES = re.compile(rb"(?:[ \t\r]*\n)+")
_PACKAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9+._-]*")
_ARCHITECTURE = re.compile(r"[a-z0-9][a-z0-9-]*")
_MD5 = re.compile(r"[0-9a-f]{32}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_FOLD = re.compile(r"\s*\n\s*")
_COMMA = re.compile(r"\s*,\s*")
_PIPE = re.compile(r"\s*\|\s*")
_FIELD_START = re.compile(rb"^[^ \t\r\n#]", re.MULTILINE)
"""The first character of a line that starts a field (not a continuation, not a comment)."""
_RELATION_FIELDS = ("Pre-Depends", "Depends", "Conflicts", "Replaces")
FIELDS_USED = frozenset(
    name.lower()
    for name in (
        "Package", "Version", "Architecture", "Name", "Author", "Maintainer", "Section",
        "Description", *_RELATION_FIELDS, "Size", "MD5sum", "SHA256", "Filename", "Tag",
        "Icon", "Depiction", "SileoDepiction", "Homepage",
    )
)  # fmt: skip


class Stanza(Deb822):
    """A stanza parsed by :class:`Deb822`, its fields kept in ``fields`` by lower-case name.

    python-debian's parser does all the parsing (lines, continuation lines,
    comments, OpenPGP armour) and hands each field to ``__setitem__``, where
    this class keeps the value in a plain dict, after Deb822's own check of
    the value. Case-insensitive names for free, and half the cost of keeping
    the fields in a Deb822 mapping and reading them back, which matters for
    an index of 60,000 stanzas. Fields a record does not use are dropped.
    ``tests/ingest`` checks that it reads every real index as Deb822 does.
    """

    def __init__(self, raw: bytes) -> None:
        self.fields: dict[str, str] = {}
        super().__init__(raw)

    def __setitem__(self, key: str, value: str) -> None:
        name = key.lower()
        if name in FIELDS_USED:
            self.validate_input(key, value)
            self.fields[name] = value


class Skip(Exception):
    """A stanza that cannot become a record; the message is the reason reports show."""


def iter_stanzas(data: bytes) -> Iterator[tuple[int, int, int]]:
    """Where each stanza of an index is: (number of its first line, start, end offsets)."""
    leading = _LEADING_BLANK_LINES.match(data)
    position = leading.end() if leading else 0
    line = 1 + data.count(b"\n", 0, position)
    for separator in _BLANK_LINES.finditer(data, position):
        yield line, position, separator.start() + 1
        line += data.count(b"\n", position, separator.end())
        position = separator.end()
    if data[position:].strip():
        yield line, position, len(data)


def _where(raw: bytes, offset: int) -> str:
    """Where ``offset`` is in a stanza, for a skip reason: its line and the field of that line."""
    line = raw.count(b"\n", 0, offset)
    start = raw.rfind(b"\n", 0, offset) + 1
    text = raw[start:offset]
    # A continuation line belongs to the field of the last line that starts one.
    while text[:1] in (b" ", b"\t") and start > 0:
        start = raw.rfind(b"\n", 0, start - 1) + 1
        text = raw[start:offset]
    field = text.partition(b":")[0][:40].decode("utf-8", "replace")
    return f"line {line + 1} of the stanza (field {field!r})"


def _description(text: str) -> tuple[str, str]:
    first, _, rest = text.partition("\n")
    if not rest:
        return first.strip(), ""
    lines = []
    for raw in rest.split("\n"):
        line = raw[1:] if raw.startswith(" ") else raw
        lines.append("" if line.rstrip() == "." else line.rstrip())
    return first.strip(), "\n".join(lines).strip("\n")


def _relation(item: PkgRelation.ParsedRelation) -> dict[str, Any]:
    out: dict[str, Any] = {"name": item["name"]}
    if item["archqual"]:
        out["archqual"] = item["archqual"]
    if item["version"]:
        out["version"] = list(item["version"])
    if item["arch"]:
        out["arch"] = [("" if a.enabled else "!") + a.arch for a in item["arch"]]
    return out


def base_address(url: str) -> str:
    """A repository address as a base for relative ones: ending with ``/`` (a directory)."""
    return url if not url or url.endswith("/") else url + "/"


@contextmanager
def quiet_python_debian() -> Iterator[None]:
    """Silence python-debian's log lines during an import: its findings become skip reasons."""
    logger = logging.getLogger("debian")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


class Mapper:
    """Maps stanzas of one repository; caches what repeats across stanzas (relations, tags)."""

    def __init__(self, base_url: str, limits: ImportLimits | None = None) -> None:
        self.base_url = base_address(base_url)
        self.limits = limits or ImportLimits()
        self._relations: dict[str, dict[str, Any]] = {}
        """One relation (``libc6 (>= 2.34)``) parsed."""
        self._compatibility: dict[tuple[str, str, str], Compatibility] = {}
        self._relation_fields: dict[str, list[list[dict[str, Any]]]] = {}
        """A whole relation field parsed: many stanzas share the same ``Depends``."""
        self._versions: set[str] = set()
        self._shared: dict[str, str] = {}
        self._people: dict[str, str] = {}
        """A ``Maintainer`` or ``Author`` as it came, and as a record holds it (made once)."""

    def _person(self, value: str) -> str:
        """A ``Maintainer`` or ``Author`` without markup, kept once: most repeat in an index
        (and each holds a ``<``, which :func:`neutral_text` must look at)."""
        found = self._people.get(value)
        if found is None:
            found = self._people[value] = neutral_text(value)
        return found

    def address(self, value: str) -> str:
        """An http(s) address for ``value``, relative ones resolved; ``""`` for anything else
        (another scheme, or a character that would end the link where a client embeds it)."""
        value = value.strip()
        if not value:
            return ""
        if self.base_url and not value.startswith(("http://", "https://")):
            value = urljoin(self.base_url, value)
        return value if link_problem(value, https_only=False) is None else ""

    def _parsed(self, raw: str) -> list[list[dict[str, Any]]]:
        groups = []
        for group in _COMMA.split(raw):
            alternatives = []
            for item in _PIPE.split(group):
                parsed = self._relations.get(item)
                if parsed is None:
                    parsed = self._relations[item] = _relation(
                        PkgRelation.parse_relations(item)[0][0]
                    )
                alternatives.append(parsed)
            groups.append(alternatives)
        return groups

    def _check(self, raw: bytes) -> None:
        """:class:`Skip` for a stanza too large, with too many fields, not UTF-8 or with a control."""
        limits = self.limits
        if len(raw) > limits.stanza_bytes:
            raise Skip(
                f"{len(raw)} bytes, over the limit of {limits.stanza_bytes} "
                "(PKGCAT_STANZA_MAX_BYTES)"
            )
        # Counting the lines is cheap; the fields are counted only when there may be too many.
        if raw.count(b"\n") >= limits.stanza_fields:
            fields = len(_FIELD_START.findall(raw))
            if fields > limits.stanza_fields:
                raise Skip(
                    f"{fields} fields, over the limit of {limits.stanza_fields} "
                    "(PKGCAT_STANZA_MAX_FIELDS)"
                )
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise Skip(
                f"not valid UTF-8: byte 0x{raw[error.start]:02x} on {_where(raw, error.start)}"
            ) from None
        control = control_in_stanza(raw)
        if control is not None:
            character, offset = control
            raise Skip(f"holds the control character {character} on {_where(raw, offset)}")

    def map(self, raw: bytes) -> Record:
        """The record of one stanza; :class:`Skip` when it cannot make one."""
        self._check(raw)
        fields = Stanza(raw).fields
        if not fields:
            raise Skip("no fields a record uses (only comments, or unknown fields)")
        get = fields.get
        package, version, architecture = (
            get("package", "").strip(),
            get("version", "").strip(),
            get("architecture", "").strip(),
        )
        md5sum = get("md5sum", "").strip().lower()
        missing = [
            name
            for name, value in (
                ("Package", package),
                ("Version", version),
                ("Architecture", architecture),
                ("MD5sum", md5sum),
            )
            if not value
        ]
        if missing:
            raise Skip(
                f"missing required field{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
            )
        if len(package) > 255 or not _PACKAGE_NAME.fullmatch(package):
            raise Skip(f"Package: {package[:80]!r} is not a package name")
        if version not in self._versions:
            try:
                if len(version) > 255:
                    raise ValueError
                Version(version)
            except ValueError:
                raise Skip(f"Version: {version[:80]!r} is not a Debian version") from None
            self._versions.add(version)
        if len(architecture) > 64 or not _ARCHITECTURE.fullmatch(architecture):
            raise Skip(f"Architecture: {architecture[:80]!r} is not an architecture name")
        if not _MD5.fullmatch(md5sum):
            raise Skip(f"MD5sum: {md5sum[:80]!r} is not 32 hexadecimal digits")
        sha256 = get("sha256", "").strip().lower()
        if sha256 and not _SHA256.fullmatch(sha256):
            raise Skip(f"SHA256: {sha256[:80]!r} is not 64 hexadecimal digits")
        size = get("size", "").strip()
        if size and not size.isdigit():
            raise Skip(f"Size: {size[:80]!r} is not a number of bytes")

        raws = []
        relations: dict[str, Any] = {}
        for field_name in _RELATION_FIELDS:
            value = get(field_name.lower(), "")
            if "\n" in value:
                value = _FOLD.sub(" ", value)
            value = value.strip()
            raws.append(value)
            if value:
                parsed = self._relation_fields.get(value)
                if parsed is None:
                    parsed = self._relation_fields[value] = self._parsed(value)
                relations[field_name.lower()] = parsed
        tag = get("tag", "")
        if "\n" in tag:
            tag = _FOLD.sub(" ", tag)
        tag = tag.strip()
        # Only these parts decide compatibility: the rest would only fill the cache.
        inputs = (
            tag if "compatible" in tag or "cydia::" in tag else "",
            raws[1] if "firmware" in raws[1] else "",
            raws[0] if "firmware" in raws[0] else "",
        )
        compat = self._compatibility.get(inputs)
        if compat is None:
            compat = self._compatibility[inputs] = compatibility(*inputs)
        description, long_description = _description(neutral_text(get("description", "")))
        sileo = self.address(get("sileodepiction", ""))
        url = self.address(get("depiction", "")) or sileo or self.address(get("homepage", ""))
        # Values that repeat across an index are kept once: a large index holds fewer strings.
        share = self._shared.setdefault
        maintainer = self._person(get("maintainer", "").strip())
        author = self._person(get("author", "").strip())
        return Record(
            package=package,
            version=version,
            architecture=share(architecture, architecture),
            name=neutral_text(get("name", "")).strip() or package,
            author=author or maintainer,
            maintainer=maintainer,
            section=share(section := get("section", "").strip(), section),
            description=description,
            long_description=long_description,
            pre_depends=raws[0],
            depends=raws[1],
            conflicts=raws[2],
            replaces=raws[3],
            relations=orjson.dumps(relations).decode() if relations else "{}",
            size=int(size or 0),
            md5sum=md5sum,
            sha256=sha256,
            filename=get("filename", "").strip(),
            tag=share(tag, tag),
            compatible=compat.json,
            commercial=compat.commercial,
            icon=self.address(get("icon", "")),
            url=url,
            depiction=sileo,
            screenshots="[]",
        )
