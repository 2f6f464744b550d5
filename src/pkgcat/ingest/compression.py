"""The compressions an APT index comes in, in APT's order of preference.

APT fetches the first of ``Packages.zst``, ``.xz``, ``.lzma``, ``.bz2``, ``.gz``,
``.lz4`` and plain ``Packages`` that the repository offers (apt.conf(5),
``Acquire::CompressionTypes::Order``). gzip, bzip2, xz and lzma come from the
standard library; zstd and lz4 from the ``zstandard`` and ``lz4`` packages.
A stream that is cut short or is not of its announced format raises
:class:`~pkgcat.ingest.errors.CompressionError` naming the file: a truncated
index is never taken for a short one.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import zlib
from collections.abc import Callable

import lz4.frame
import zstandard

from pkgcat.ingest.errors import CompressionError

EXTENSIONS: tuple[str, ...] = (".zst", ".xz", ".lzma", ".bz2", ".gz", ".lz4", "")
"""Suffixes of an index file, best first; ``""`` is the plain, uncompressed index."""


def extension_of(name: str) -> str:
    """The compression suffix of a file name (``""`` when it has none we know)."""
    for extension in EXTENSIONS[:-1]:
        if name.endswith(extension):
            return extension
    return ""


def _zstd(data: bytes) -> bytes:
    # A .zst file may hold several frames; each decompressobj reads one.
    parts: list[bytes] = []
    rest = data
    while rest:
        reader = zstandard.ZstdDecompressor().decompressobj()
        parts.append(reader.decompress(rest))
        if not reader.eof:
            raise ValueError("the data ends before the end of its last frame")
        rest = reader.unused_data
    return b"".join(parts)


def _lz4(data: bytes) -> bytes:
    parts: list[bytes] = []
    rest = data
    while rest:
        reader = lz4.frame.LZ4FrameDecompressor()
        parts.append(reader.decompress(rest))
        if not reader.eof:
            raise ValueError("the data ends before the end of its last frame")
        rest = reader.unused_data or b""
    return b"".join(parts)


def _xz(data: bytes) -> bytes:
    return lzma.decompress(data, format=lzma.FORMAT_XZ)


def _lzma(data: bytes) -> bytes:
    # The legacy "LZMA-alone" format, not xz: what dpkg-scanpackages | lzma wrote.
    return lzma.decompress(data, format=lzma.FORMAT_ALONE)


def _plain(data: bytes) -> bytes:
    return data


_DECODERS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    ".zst": ("zstd", _zstd),
    ".xz": ("xz", _xz),
    ".lzma": ("lzma", _lzma),
    ".bz2": ("bzip2", bz2.decompress),
    ".gz": ("gzip", gzip.decompress),
    ".lz4": ("lz4", _lz4),
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


def decompress(name: str, data: bytes) -> bytes:
    """The index ``name`` decompressed according to its suffix."""
    label, decode = _DECODERS[extension_of(name)]
    try:
        return decode(data)
    except _DECODE_ERRORS as error:
        raise CompressionError(f"{name}: not valid {label} data ({error})") from None
