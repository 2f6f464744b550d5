"""The compressions an APT index comes in, in APT's order of preference, decoded within a cap.

APT fetches the first of ``Packages.zst``, ``.xz``, ``.lzma``, ``.bz2``, ``.gz``,
``.lz4`` and plain ``Packages`` that the repository offers (apt.conf(5),
``Acquire::CompressionTypes::Order``). gzip, bzip2, xz and lzma come from the
standard library; zstd and lz4 from the ``zstandard`` and ``lz4`` packages.

Every format is decoded in pieces of at most about a MiB, and the pieces are
counted: past ``limit`` bytes (``PKGCAT_INDEX_MAX_BYTES``) decoding stops with
a :class:`~pkgcat.ingest.errors.LimitError`, so a small file that expands to
gigabytes costs the import its cap and no more. The decoders' own
``max_length`` does this for gzip (:class:`pkgcat.net.decoding.Inflater`), xz,
lzma, bzip2 and lz4; zstd's has none, so its input is fed in slices small
enough that no slice can expand past a few MiB.

A stream that is cut short or is not of its announced format raises
:class:`~pkgcat.ingest.errors.CompressionError` naming the file: a truncated
index is never taken for a short one.
"""

from __future__ import annotations

import bz2
import io
import lzma
import zlib
from collections.abc import Callable, Iterator
from typing import Protocol

import lz4.frame
import zstandard

from pkgcat.ingest.errors import CompressionError, LimitError
from pkgcat.net.decoding import PIECE, Inflater

EXTENSIONS: tuple[str, ...] = (".zst", ".xz", ".lzma", ".bz2", ".gz", ".lz4", "")
"""Suffixes of an index file, best first; ``""`` is the plain, uncompressed index."""
ZSTD_SLICE = 128
"""Input bytes given to zstd at once: a zstd block of 4 bytes can stand for 128 KiB, so a
slice expands to 4 MiB at the very most."""


def extension_of(name: str) -> str:
    """The compression suffix of a file name (``""`` when it has none we know)."""
    for extension in EXTENSIONS[:-1]:
        if name.endswith(extension):
            return extension
    return ""


class _Stepped(Protocol):
    """The decompressor objects of lzma, bz2 and lz4.frame: output capped by ``max_length``."""

    @property
    def eof(self) -> bool: ...
    @property
    def needs_input(self) -> bool: ...
    @property
    def unused_data(self) -> bytes | None: ...
    def decompress(self, data: bytes, max_length: int = -1) -> bytes: ...


def _stepped(new: Callable[[], _Stepped]) -> Callable[[bytes], Iterator[bytes]]:
    """Pieces of ``data`` decoded by decompressors of ``new``, one per stream or frame."""

    def pieces(data: bytes) -> Iterator[bytes]:
        rest = data
        while rest:
            decoder = new()
            yield decoder.decompress(rest, PIECE)
            while not decoder.eof and not decoder.needs_input:
                yield decoder.decompress(b"", PIECE)
            if not decoder.eof:
                raise EOFError("the data ends before the end of its last stream")
            rest = decoder.unused_data or b""

    return pieces


def _gzip(data: bytes) -> Iterator[bytes]:
    inflater = Inflater()
    yield from inflater.feed(data)
    inflater.end()


def _zstd(data: bytes) -> Iterator[bytes]:
    view = memoryview(data)
    position = 0
    while position < len(data):
        # A .zst file may hold several frames; each decompressobj reads one.
        decoder = zstandard.ZstdDecompressor().decompressobj()
        while not decoder.eof and position < len(data):
            yield decoder.decompress(view[position : position + ZSTD_SLICE])
            position += ZSTD_SLICE
        if not decoder.eof:
            raise EOFError("the data ends before the end of its last frame")
        position -= len(decoder.unused_data)


def _plain(data: bytes) -> Iterator[bytes]:
    yield data


_DECODERS: dict[str, tuple[str, Callable[[bytes], Iterator[bytes]]]] = {
    ".zst": ("zstd", _zstd),
    ".xz": ("xz", _stepped(lambda: lzma.LZMADecompressor(lzma.FORMAT_XZ))),
    # The legacy "LZMA-alone" format, not xz: what dpkg-scanpackages | lzma wrote.
    ".lzma": ("lzma", _stepped(lambda: lzma.LZMADecompressor(lzma.FORMAT_ALONE))),
    ".bz2": ("bzip2", _stepped(bz2.BZ2Decompressor)),
    ".gz": ("gzip", _gzip),
    ".lz4": ("lz4", _stepped(lz4.frame.LZ4FrameDecompressor)),
    "": ("plain", _plain),
}

# What each library raises for data it cannot decode.
_DECODE_ERRORS = (
    OSError,
    EOFError,
    ValueError,
    RuntimeError,
    lzma.LZMAError,
    zlib.error,
    zstandard.ZstdError,
)


def decompress(name: str, data: bytes, limit: int) -> bytes:
    """The index ``name`` decompressed according to its suffix, at most ``limit`` bytes of it."""
    label, decode = _DECODERS[extension_of(name)]
    if label == "plain" and len(data) <= limit:
        return data
    out = io.BytesIO()
    try:
        for piece in decode(data):
            if out.tell() + len(piece) > limit:
                raise LimitError(
                    f"{name}: more than {limit} bytes once decompressed (PKGCAT_INDEX_MAX_BYTES)"
                )
            out.write(piece)
    except LimitError:
        raise
    except _DECODE_ERRORS as error:
        raise CompressionError(f"{name}: not valid {label} data ({error})") from None
    return out.getvalue()
