"""What a .deb file is, read before anything is stored: its archive, its control file, its digests.

A .deb (deb(5)) is an ar archive (:mod:`pkgcat.repository.ar`) of
``debian-binary`` (the format version, ``2.x``), ``control.tar`` and
``data.tar``, in that order. Its members are taken as dpkg-deb takes them
(src/deb/extract.c, ``extracthalf``): ``debian-binary`` first; then members whose
names begin with ``_`` may come anywhere after it and are skipped; ``control.tar`` once,
uncompressed or ``.gz``, ``.xz`` or ``.zst``; ``data.tar`` after it, uncompressed
or ``.gz``, ``.xz``, ``.zst``, ``.bz2`` or ``.lzma`` (the compressions deb(5)
lists for each); any other member before ``data.tar`` is refused, and members
after it are ignored (deb(5)), though they too must be whole. A member of no
bytes is refused, as dpkg-deb refuses it.

Nothing is held whole. Each tar archive is read from the file as a stream:
its member's bytes in pieces, decoded by :func:`pkgcat.ingest.compression.decoded`
(no external program), counted against ``PKGCAT_PUBLISH_MAX_UNPACKED_BYTES``
and read by :mod:`tarfile` in stream mode (``r|``), every entry's bytes read
through; its decoder is closed once the member is read or refused, so that a refusal
kept somewhere (its traceback holds the reading's frames) keeps none of the decoder's
memory. The ``control`` file is read only once its header gave a size within
``PKGCAT_STANZA_MAX_BYTES``. A tar archive must be whole: every entry's bytes
there, and its end-of-archive block of zeros (tarfile alone takes a header cut
short, a damaged one or the bare end of the data for the end); every compressed
member must end its last stream. Entry types are those dpkg unpacks
(lib/dpkg/tarfn.c, ``tar_extractor``); control.tar may also hold pax headers,
since dpkg unpacks it with tar. A GNU long name and a pax header are at most
:data:`HEADER_MAX` bytes: tarfile reads them whole.

:func:`inspect_deb` adds what a repository needs: one control paragraph whose
fields pass the same rules as an imported Packages stanza
(:class:`pkgcat.ingest.control.Mapper`: package name, Debian version,
architecture, relations, digests), the fields deb-control(5) requires of a
binary package, fields that clients render as links or rich text that follow
:mod:`pkgcat.ingest.rendered` (a seller's file that breaks a rule is refused naming the
field; a mirrored one loses what breaks it), and the file's size and digests.

Anything wrong raises :class:`Refused`, whose message is the one-line reason.
"""

from __future__ import annotations

import hashlib
import io
import posixpath
import re
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from debian.deb822 import Deb822

from pkgcat import config
from pkgcat.ingest.compression import DECODE_ERRORS, decoded, label
from pkgcat.ingest.control import Mapper, Skip, quiet_python_debian
from pkgcat.ingest.limits import ImportLimits
from pkgcat.ingest.rendered import clean, line_break_problem, upload_problem
from pkgcat.repository import ar
from pkgcat.repository.reserved import field_problem
from pkgcat.storage.blobs import CHUNK
from pkgcat.storage.records import Record

REQUIRED = ("Package", "Version", "Architecture", "Maintainer", "Description")
"""The fields deb-control(5) requires in a binary package's control file."""
COMPUTED = frozenset(("filename", "size", "md5sum", "sha1", "sha256", "sha512"))
"""Fields of a Packages stanza that the repository writes about the file: never taken from it."""
_VERSION = re.compile(rb"2\.\d+\n")
CONTROL_COMPRESSIONS = ("", ".gz", ".xz", ".zst")
DATA_COMPRESSIONS = ("", ".gz", ".xz", ".zst", ".bz2", ".lzma")
"""What follows ``control.tar`` and ``data.tar`` in their members' names (deb(5))."""
DECODER_MEMORY = 128 * config.MIB
"""The most an xz, lzma or zstd decoder may take for its dictionary or window: zstd's own
default limit (``ZSTD_WINDOWLOG_LIMIT_DEFAULT``), twice what ``xz -9`` needs. Without it
a stream could name a dictionary of gigabytes and fill it as it unpacks."""
HEADER_MAX = 64 * config.KIB
"""The most bytes of a GNU long name or link, or of a pax header (a path is at most 4 KiB)."""


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


@dataclass(frozen=True, slots=True)
class DebLimits:
    """What one .deb may be, and the settings that say so."""

    file_bytes: int = config.DEFAULT_PUBLISH_MAX_BYTES
    """The file itself (``PKGCAT_PUBLISH_MAX_BYTES``)."""
    unpacked_bytes: int = config.DEFAULT_PUBLISH_MAX_UNPACKED_BYTES
    """control.tar or data.tar once decompressed (``PKGCAT_PUBLISH_MAX_UNPACKED_BYTES``)."""
    control_bytes: int = config.DEFAULT_STANZA_MAX_BYTES
    """The control file (``PKGCAT_STANZA_MAX_BYTES``, as a stanza of an index)."""
    control_fields: int = config.DEFAULT_STANZA_MAX_FIELDS
    """Its fields (``PKGCAT_STANZA_MAX_FIELDS``)."""

    @classmethod
    def from_settings(cls, settings: config.Settings) -> DebLimits:
        return cls(
            file_bytes=settings.publish_max_bytes,
            unpacked_bytes=settings.publish_max_unpacked_bytes,
            control_bytes=settings.stanza_max_bytes,
            control_fields=settings.stanza_max_fields,
        )


class _Unpacked(io.RawIOBase):
    """A compressed member as tarfile reads it: decoded as it is read, counted against its bound."""

    def __init__(self, member: ar.Member, extension: str, limit: int) -> None:
        self.name, self.limit, self.label = member.name, limit, label(extension)
        self._pieces = decoded(extension, member.chunks(), memory=DECODER_MEMORY)
        self._rest = memoryview(b"")
        self.count = 0

    def readable(self) -> bool:
        return True

    def _next(self) -> bool:
        """The next piece in hand; False at the end of the member."""
        try:
            # Held by the stream alone, never by a local: a refusal's traceback keeps this
            # frame, and with it what its locals hold (a piece is up to 4 MiB).
            self._rest = memoryview(next(self._pieces))
        except StopIteration:
            return False
        except DECODE_ERRORS as error:
            raise Refused(
                f"not a .deb: {self.name}: not valid {self.label} data ({_one_line(error)})"
            ) from None
        self.count += len(self._rest)
        if self.count > self.limit:
            raise Refused(
                f"{self.name}: more than {self.limit} bytes once decompressed "
                "(PKGCAT_PUBLISH_MAX_UNPACKED_BYTES)"
            )
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._rest:
            if not self._next():
                return 0
        size = min(len(buffer), len(self._rest))
        buffer[:size] = self._rest[:size]
        self._rest = self._rest[size:]
        return size

    def drain(self) -> None:
        """Read the rest through: what follows the tar archive's end must decode and end too."""
        self._rest = memoryview(b"")
        while self._next():
            pass

    def close(self) -> None:
        """Let go of the decoder and its piece now, read through or not.

        A decoder's state is MiBs outside Python's objects (liblzma's dictionary, 8 MiB at
        ``xz -6``; zstd's window), freed only with the decoder. Left to the last reference,
        it lives as long as anything keeps a refusal raised while reading: its traceback
        holds the frames that hold this stream.
        """
        self._pieces.close()
        self._rest = memoryview(b"")
        super().close()


class _Broken(Exception):
    """A tar archive tarfile would read on past its damage; the message says what it is."""


# tarfile's own header errors; not in its __all__, so typeshed's stubs leave them out.
_CUT: tuple[type[Exception], ...] = (tarfile.EmptyHeaderError, tarfile.TruncatedHeaderError)  # type: ignore[attr-defined]
_DAMAGED: type[Exception] = tarfile.InvalidHeaderError  # type: ignore[attr-defined]
_METADATA = frozenset((tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK))
_PAX = frozenset((tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE))


class _Entry(tarfile.TarInfo):
    """A tar header as tarfile reads it, with dpkg's rules and the bounds tarfile lacks."""

    TYPES: ClassVar[frozenset[bytes]] = frozenset(
        (
            *(tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.LNKTYPE, tarfile.SYMTYPE),
            *(tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.DIRTYPE, tarfile.FIFOTYPE),
            *_METADATA,
        )
    )
    """The entry types dpkg unpacks from data.tar (lib/dpkg/tarfn.c, ``tar_extractor``)."""

    @classmethod
    def fromtarfile(cls, tar: tarfile.TarFile) -> _Entry:
        # CPython's TarFile.next() takes a header cut short, damaged or missing after the
        # first for the end of the archive (Lib/tarfile.py): only a block of zeros is one.
        try:
            return super().fromtarfile(tar)
        except _CUT:
            raise _Broken("it ends without its end-of-archive block (cut short?)") from None
        except _DAMAGED as error:
            raise _Broken(f"a damaged header ({error})") from None

    def _proc_member(self, tar: tarfile.TarFile) -> _Entry:
        # Called by fromtarfile for every header, the long names' and pax ones before the
        # entry they describe; tarfile then reads a long name or pax header whole.
        if self.type not in self.TYPES:
            raise _Broken(f"an entry of type {self.type!r}, which dpkg does not unpack")
        if (self.type in _METADATA or self.type in _PAX) and self.size > HEADER_MAX:
            raise _Broken(f"a long name or pax header of {self.size} bytes, over {HEADER_MAX}")
        entry: _Entry = super()._proc_member(tar)  # type: ignore[misc]
        return entry


class _ControlEntry(_Entry):
    TYPES = _Entry.TYPES | _PAX
    """control.tar is unpacked by tar, which reads pax headers too (src/deb/extract.c)."""


def _tar(
    member: ar.Member,
    extension: str,
    limits: DebLimits,
    kind: type[_Entry],
    each: Callable[[tarfile.TarFile, tarfile.TarInfo], None],
) -> None:
    """Read the tar archive of ``member`` through, calling ``each`` with every entry."""
    if not member.size:
        raise Refused(f"not a .deb: {member.name} is empty")
    with _Unpacked(member, extension, limits.unpacked_bytes) as stream:
        try:
            with tarfile.open(fileobj=stream, mode="r|", tarinfo=kind) as tar:
                while (entry := tar.next()) is not None:
                    # Stream mode keeps every header it read (a list typeshed does not show):
                    # millions of empty entries would be as many objects.
                    tar.members.clear()  # type: ignore[attr-defined]
                    each(tar, entry)
            stream.drain()
        except _Broken as error:
            raise Refused(f"not a .deb: {member.name}: {error}") from None
        except tarfile.TarError as error:
            raise Refused(f"not a .deb: {member.name}: {_one_line(error)}") from None


class _ControlFile:
    """Sees every entry of control.tar; keeps the one control file, read once its size is known."""

    def __init__(self, limits: DebLimits) -> None:
        self.limit = limits.control_bytes
        self.found: bytes | None = None

    def __call__(self, tar: tarfile.TarFile, entry: tarfile.TarInfo) -> None:
        # tar, which dpkg unpacks control.tar with, drops a leading "/" and what leads to a "..".
        if posixpath.normpath(entry.name.lstrip("/")) != "control":
            return
        if not entry.isreg():
            raise Refused("not a .deb: the control file in control.tar is not a regular file")
        if self.found is not None:
            raise Refused("not a .deb: control.tar holds two control files")
        if entry.size > self.limit:
            raise Refused(
                f"control: {entry.size} bytes, over the limit of {self.limit} "
                "(PKGCAT_STANZA_MAX_BYTES)"
            )
        file = tar.extractfile(entry)
        assert file is not None  # a regular file's
        self.found = file.read()


def _nothing(tar: tarfile.TarFile, entry: tarfile.TarInfo) -> None:
    """An entry of data.tar: tarfile reads its bytes through on to the next header."""


def _archive(path: Path, limits: DebLimits) -> bytes:
    """The control file's bytes, once the archive and its members are found sound."""
    control: _ControlFile | None = None
    data = False
    with path.open("rb") as file:
        try:
            members = ar.members(file)
            first = next(members, None)
            if first is None or first.name != "debian-binary":
                raise Refused("not a .deb: its first member is not debian-binary")
            if first.size > 16 or not _VERSION.fullmatch(first.read()):
                raise Refused("not a .deb: debian-binary is not format 2.x")
            for member in members:
                name = member.name
                if data or name.startswith("_"):
                    continue  # after data.tar, or optional: skipped, whole all the same
                if name.startswith("control.tar"):
                    extension = _compression(name, "control.tar", CONTROL_COMPRESSIONS)
                    if control is not None:
                        raise Refused("not a .deb: it holds two control.tar members")
                    control = _ControlFile(limits)
                    _tar(member, extension, limits, _ControlEntry, control)
                elif name.startswith("data.tar"):
                    extension = _compression(name, "data.tar", DATA_COMPRESSIONS)
                    if control is None:
                        raise Refused(f"not a .deb: {name} comes before control.tar")
                    _tar(member, extension, limits, _Entry, _nothing)
                    data = True
                else:
                    before = "data.tar" if control is not None else "control.tar"
                    raise Refused(f"not a .deb: an unexpected member {name!r} before {before}")
        except ar.ArError as error:
            raise Refused(f"not a .deb: {error}") from None
        except OSError as error:
            raise Refused(f"not a .deb: {_one_line(error)}") from None
    if control is None:
        raise Refused("not a .deb: it has no control.tar member")
    if not data:
        raise Refused("not a .deb: it has no data.tar member")
    if control.found is None:
        raise Refused("not a .deb: its control archive has no control file")
    return control.found


def _compression(name: str, stem: str, allowed: tuple[str, ...]) -> str:
    extension = name[len(stem) :]
    if extension not in allowed:
        shown = ", ".join(e or "none" for e in allowed)
        raise Refused(
            f"not a .deb: {name!r} is compressed in a way dpkg does not read ({stem}: {shown})"
        )
    return extension


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


def inspect_deb(path: Path, *, base_url: str, limits: DebLimits, imported: bool = False) -> DebInfo:
    """Read and check the .deb at ``path``; :class:`Refused` with the reason when it is unfit.

    ``base_url`` resolves relative addresses of its fields (Icon, depictions),
    as an import of its source's repository would. A seller's file (``imported``
    false) is refused when a field clients render breaks a rule of
    :mod:`pkgcat.ingest.rendered`; a file of an imported repository loses the field.
    """
    check_size(path, limits.file_bytes)
    with quiet_python_debian():
        paragraph = _paragraph(_archive(path, limits), imported=imported)
        missing = [name for name in REQUIRED if not paragraph.get(name, "").strip()]
        if missing:
            raise Refused(
                f"control: missing required field{'s' * (len(missing) > 1)} {', '.join(missing)}"
            )
        for name in list(paragraph):
            if name.lower() in COMPUTED:
                del paragraph[name]
            elif not imported and (
                problem := upload_problem(name, paragraph[name])
                or field_problem(name, paragraph[name])
            ):
                raise Refused(f"control: {problem}")
        if imported:
            clean(paragraph)
        control = paragraph.dump().rstrip("\n")
        found = digests(path)
        stanza = f"{control}\nSize: {found.size}\nMD5sum: {found.md5sum}\nSHA256: {found.sha256}\n"
        try:
            raw = stanza.encode()
            # The control file's size was bounded from its tar header; the stanza adds the digests.
            bounds = ImportLimits(stanza_bytes=len(raw), stanza_fields=limits.control_fields)
            record = Mapper(base_url, bounds).map(raw)
        except Skip as error:
            raise Refused(f"control: {error}") from None
    filename = pool_path(record.package, record.version, record.architecture, found.sha256)
    return DebInfo(found, control, record._replace(filename=filename))
