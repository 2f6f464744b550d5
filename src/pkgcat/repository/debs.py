"""What a .deb file is, read before anything is stored: its archive, its control file, its digests.

A .deb (deb(5)) is an ar archive of ``debian-binary`` (the format version,
``2.x``), ``control.tar[.gz|.xz|.zst|...]`` and ``data.tar[...]``, in that
order. python-debian's :class:`debian.debfile.DebFile` reads the archive and
its members; :func:`inspect_deb` adds what a repository needs: the format
version, a readable data archive, one control paragraph whose fields pass the
same rules as an imported Packages stanza (:class:`pkgcat.ingest.control.Mapper`:
package name, Debian version, architecture, relations, digests), the fields
deb-control(5) requires of a binary package, fields that clients render as links
or rich text that follow :mod:`pkgcat.ingest.rendered` (a seller's file that breaks
a rule is refused naming the field; a mirrored one loses what breaks it), and the
file's size and digests.

Anything wrong raises :class:`Refused`, whose message is the one-line reason.
"""

from __future__ import annotations

import hashlib
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

from debian.arfile import ArError
from debian.deb822 import Deb822
from debian.debfile import DebError, DebFile

from pkgcat.ingest.control import Mapper, Skip, quiet_python_debian
from pkgcat.ingest.rendered import clean, line_break_problem, upload_problem
from pkgcat.storage.blobs import CHUNK
from pkgcat.storage.records import Record

REQUIRED = ("Package", "Version", "Architecture", "Maintainer", "Description")
"""The fields deb-control(5) requires in a binary package's control file."""
COMPUTED = frozenset(("filename", "size", "md5sum", "sha1", "sha256", "sha512"))
"""Fields of a Packages stanza that the repository writes about the file: never taken from it."""
_VERSION = re.compile(rb"2\.\d+\n")


class Refused(Exception):
    """A file that cannot be published; the message is the reason, in one line."""


@dataclass(frozen=True, slots=True)
class Digests:
    size: int
    md5sum: str
    sha1: str
    sha256: str
    sha512: str


@dataclass(frozen=True, slots=True)
class DebInfo:
    """A .deb found fit to publish."""

    digests: Digests
    control: str
    """Its control paragraph as the Packages index shows it (no computed field, no final newline)."""
    record: Record
    """The catalogue record its control file makes (the columns of ``package_records``)."""

    @property
    def key(self) -> tuple[str, str, str]:
        return self.record.package, self.record.version, self.record.architecture


def digests(path: Path) -> Digests:
    """A file's size and the four digests a Packages stanza and a Release list."""
    hashes = [hashlib.md5(usedforsecurity=False), hashlib.sha1(usedforsecurity=False)]
    hashes += [hashlib.sha256(), hashlib.sha512()]
    size = 0
    with path.open("rb") as file:
        while chunk := file.read(CHUNK):
            size += len(chunk)
            for digest in hashes:
                digest.update(chunk)
    md5, sha1, sha256, sha512 = (digest.hexdigest() for digest in hashes)
    return Digests(size, md5, sha1, sha256, sha512)


def pool_path(package: str, version: str, architecture: str, sha256: str) -> str:
    """Where the file is served, relative to a repository's root (the Packages ``Filename``).

    Under its digest, so that a path always names the same bytes; then the name
    Debian gives a .deb (the epoch's colon left out: no escaping anywhere).
    """
    plain = version.partition(":")[2] or version
    return f"pool/{sha256[:2]}/{sha256}/{package}_{plain}_{architecture}.deb"


def _archive(path: Path) -> bytes:
    """The control file's bytes, once the archive and its members are found sound."""
    with path.open("rb") as file:
        magic = file.read(8)
    if magic != b"!<arch>\n":
        raise Refused("not a .deb: not an ar archive")
    try:
        deb = DebFile(filename=str(path))
    except (DebError, ArError, OSError, EOFError, ValueError) as error:
        raise Refused(f"not a .deb: {_one_line(error)}") from None
    try:
        with deb:
            members = [member.name for member in deb.getmembers()]
            if not members or members[0] != "debian-binary":
                raise Refused("not a .deb: its first member is not debian-binary")
            version = deb.getmember("debian-binary")
            version.seek(0)  # python-debian leaves a member read once at its end
            if not _VERSION.fullmatch(version.read()):
                raise Refused("not a .deb: debian-binary is not format 2.x")
            data = deb.data.tgz()
            for _ in data:  # every header of the data archive, read through
                pass
            control = deb.control.get_content("control")
    except Refused:
        raise
    except (DebError, ArError, tarfile.TarError, OSError, EOFError, ValueError) as error:
        raise Refused(f"not a .deb: {_one_line(error)}") from None
    if control is None:
        raise Refused("not a .deb: its control archive has no control file")
    return bytes(control)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:200]


def _paragraph(raw: bytes, *, imported: bool) -> Deb822:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused("control: not valid UTF-8") from None
    # python-debian splits a text at every line break str.splitlines knows: a U+2028 or a
    # lone CR inside a value would start a field there, unseen by the seller's own tools.
    problem = None if imported else line_break_problem(text)
    if problem is not None:
        raise Refused(f"control: {problem}")
    paragraphs = [p for p in Deb822.iter_paragraphs(text.splitlines(keepends=True)) if p]
    if len(paragraphs) != 1:
        raise Refused(f"control: {len(paragraphs)} paragraphs, not one")
    return paragraphs[0]


def check_size(path: Path, max_bytes: int) -> None:
    """:class:`Refused` when the file is over ``max_bytes``: first, before reading a byte of it."""
    size = path.stat().st_size
    if size > max_bytes:
        raise Refused(f"too large: {size} bytes, over the limit of {max_bytes}")


def inspect_deb(path: Path, *, base_url: str, max_bytes: int, imported: bool = False) -> DebInfo:
    """Read and check the .deb at ``path``; :class:`Refused` with the reason when it is unfit.

    ``base_url`` resolves relative addresses of its fields (Icon, depictions),
    as an import of its source's repository would. A seller's file (``imported``
    false) is refused when a field clients render breaks a rule of
    :mod:`pkgcat.ingest.rendered`; a file of an imported repository loses the field.
    """
    check_size(path, max_bytes)
    with quiet_python_debian():
        paragraph = _paragraph(_archive(path), imported=imported)
        missing = [name for name in REQUIRED if not paragraph.get(name, "").strip()]
        if missing:
            raise Refused(
                f"control: missing required field{'s' * (len(missing) > 1)} {', '.join(missing)}"
            )
        for name in list(paragraph):
            if name.lower() in COMPUTED:
                del paragraph[name]
            elif not imported and (problem := upload_problem(name, paragraph[name])):
                raise Refused(f"control: {problem}")
        if imported:
            clean(paragraph)
        control = paragraph.dump().rstrip("\n")
        found = digests(path)
        stanza = f"{control}\nSize: {found.size}\nMD5sum: {found.md5sum}\nSHA256: {found.sha256}\n"
        try:
            record = Mapper(base_url).map(stanza.encode())
        except Skip as error:
            raise Refused(f"control: {error}") from None
    filename = pool_path(record.package, record.version, record.architecture, found.sha256)
    return DebInfo(found, control, record._replace(filename=filename))
