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

The decoders read a stream of chunks (:func:`decoded`): :func:`decompress` hands
them an index whole, and :mod:`pkgcat.repository.debs` the members of a .deb
as they are read from disk, never whole.
"""

from __future__ import annotations

import bz2
import io
import lzma
import zlib
from collections.abc import Callable, Generator, Iterable
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


Pieces = Generator[bytes, None, None]
"""A decoder's pieces: closed, it lets go of its decoder (and of the chunks it reads) at once."""
Decoder = Callable[[Iterable[bytes], int | None], Pieces]
"""Pieces of what the chunks given decode to, as they are read; the int: the most memory a
decoder may take (liblzma's ``memlimit``, zstd's window), or None for the library's own."""


def _stepped(new: Callable[[int | None], _Stepped]) -> Decoder:
    """Pieces of the chunks decoded by decompressors of ``new``, one per stream or frame."""

    def pieces(chunks: Iterable[bytes], memory: int | None) -> Pieces:
        decoder: _Stepped | None = None
        for chunk in chunks:
            data = chunk
            while data:
                if decoder is None or decoder.eof:
                    decoder = new(memory)
                yield decoder.decompress(data, PIECE)
                while not decoder.eof and not decoder.needs_input:
                    yield decoder.decompress(b"", PIECE)
                data = (decoder.unused_data or b"") if decoder.eof else b""
        if decoder is not None and not decoder.eof:
            raise EOFError("the data ends before the end of its last stream")

    return pieces


def _gzip(chunks: Iterable[bytes], _memory: int | None) -> Pieces:
    inflater = Inflater()
    for chunk in chunks:
        yield from inflater.feed(chunk)
    inflater.end()


def _zstd(chunks: Iterable[bytes], memory: int | None) -> Pieces:
    decoder: zstandard.ZstdDecompressionObj | None = None
    for chunk in chunks:
        view = memoryview(chunk)
        position = 0
        while position < len(view):
            # A .zst file may hold several frames; each decompressobj reads one.
            if decoder is None or decoder.eof:
                # 0: zstd's own limit on a frame's window (ZSTD_WINDOWLOG_LIMIT_DEFAULT, 128 MiB).
                decoder = zstandard.ZstdDecompressor(max_window_size=memory or 0).decompressobj()
            piece = view[position : position + ZSTD_SLICE]
            yield decoder.decompress(piece)
            position += len(piece)
            if decoder.eof:
                position -= len(decoder.unused_data)
    if decoder is not None and not decoder.eof:
        raise EOFError("the data ends before the end of its last frame")


def _plain(chunks: Iterable[bytes], _memory: int | None) -> Pieces:
    yield from chunks


_DECODERS: dict[str, tuple[str, Decoder]] = {
    ".zst": ("zstd", _zstd),
    ".xz": ("xz", _stepped(lambda memory: lzma.LZMADecompressor(lzma.FORMAT_XZ, memory))),
    # The legacy "LZMA-alone" format, not xz: what dpkg-scanpackages | lzma wrote.
    ".lzma": ("lzma", _stepped(lambda memory: lzma.LZMADecompressor(lzma.FORMAT_ALONE, memory))),
    ".bz2": ("bzip2", _stepped(lambda _: bz2.BZ2Decompressor())),
    ".gz": ("gzip", _gzip),
    ".lz4": ("lz4", _stepped(lambda _: lz4.frame.LZ4FrameDecompressor())),
    "": ("plain", _plain),
}

DECODE_ERRORS = (
    OSError,
    EOFError,
    ValueError,
    RuntimeError,
    lzma.LZMAError,
    zlib.error,
    zstandard.ZstdError,
)
"""What each library raises for data it cannot decode."""


def label(extension: str) -> str:
    """The name of the compression of ``extension`` (``.xz``: ``xz``; ``""``: ``plain``)."""
    return _DECODERS[extension][0]


def decoded(extension: str, chunks: Iterable[bytes], *, memory: int | None = None) -> Pieces:
    """What ``chunks`` decode to by the compression of ``extension``, in pieces as they are read.

    A piece is at most :data:`~pkgcat.net.decoding.PIECE` bytes (a zstd slice's, 4 MiB);
    ``memory`` bounds what an xz, lzma or zstd decoder may allocate for its dictionary or
    window (None: the library's own limit). Raises one of :data:`DECODE_ERRORS` for data cut
    short or not of the format. Closing the generator frees the decoder at once: a reader
    that stops early (a bound reached) closes it rather than wait for the last reference.
    """
    return _DECODERS[extension][1](chunks, memory)


def decompress(name: str, data: bytes, limit: int) -> bytes:
    """The index ``name`` decompressed according to its suffix, at most ``limit`` bytes of it."""
    extension = extension_of(name)
    if not extension and len(data) <= limit:
        return data
    out = io.BytesIO()
    try:
        for piece in decoded(extension, [data]):
            if out.tell() + len(piece) > limit:
                raise LimitError(
                    f"{name}: more than {limit} bytes once decompressed (PKGCAT_INDEX_MAX_BYTES)"
                )
            out.write(piece)
    except LimitError:
        raise
    except DECODE_ERRORS as error:
        raise CompressionError(f"{name}: not valid {label(extension)} data ({error})") from None
    return out.getvalue()
