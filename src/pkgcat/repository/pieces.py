"""Compressed ``Packages`` files made of pieces, so that a rebuild compresses only what changed.

A ``Packages`` text is cut into pieces between stanzas (:func:`cut`), where the
files' own digests say (not at fixed offsets: a stanza added or changed moves no
other cut), each piece is compressed on its own, and the compressed pieces are
joined into one file of each format. A rebuild after one package changed
compresses one piece again, and joins.

Each joined file is one ordinary file of its format, which every reader takes:

- gzip: one member per piece, back to back (RFC 1952; zlib, apt and Python read them all);
- zstd: one frame per piece, back to back (RFC 8878; likewise);
- xz: one stream holding one block per piece, with the stream's index of them (the
  format's own way of holding independent blocks; apt reads only the first stream of
  a file, so the pieces could not be streams of their own);
- bzip2: one stream holding one block per piece, and the combined CRC of the blocks
  (bzip2's blocks are independent, but not byte-aligned: each is shifted into place;
  apt, again, reads only the first stream).

The price is in size: no match reaches across a cut (measured in docs/benchmarks.md).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import struct
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import zstandard

AVERAGE_STANZAS = 256
"""A piece ends after a stanza whose file digest is divisible by this, on average every
this many stanzas (about 256 KB of Debian's)."""
MOST_BYTES = 512 * 1024
"""A piece ends, whatever the digests say, once it holds this many bytes: bzip2's block
at level 9 holds 900,000 bytes, run-length coded, which 512 KiB of any text fits."""


def cut(stanzas: Iterable[tuple[str, bytes]], every: int = AVERAGE_STANZAS) -> list[bytes]:
    """The pieces of the text that is the stanzas (each with its file's hex digest) joined
    by blank lines: each piece ends with its last stanza's blank line, but the last one."""
    pieces: list[bytes] = []
    current: list[bytes] = []
    size = 0
    for digest, stanza in stanzas:
        current.append(stanza)
        size += len(stanza) + 1
        if int(digest[-8:], 16) % every == 0 or size >= MOST_BYTES:
            pieces.append(b"\n".join(current) + b"\n")
            current, size = [], 0
    if current:
        pieces.append(b"\n".join(current))
    elif pieces:
        pieces[-1] = pieces[-1][:-1]  # the text ends with its last stanza, not a blank line
    return pieces


@dataclass(frozen=True, slots=True)
class Format:
    """How a piece is compressed, and how compressed pieces are joined into one file."""

    piece: Callable[[bytes], Any]
    join: Callable[[Sequence[Any]], bytes]
    whole: Callable[[bytes], bytes]
    """The whole text at once (an empty text, or a piece that does not fit)."""


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def _zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=9).compress(data)


def _xz(data: bytes) -> bytes:
    return lzma.compress(data, preset=1)


def _bz2(data: bytes) -> bytes:
    return bz2.compress(data, 9)


# xz (the .xz file format, version 1.0.4): a stream is a 12-byte header, blocks, an index
# (one record per block: unpadded and uncompressed sizes) and a 12-byte footer.


@dataclass(frozen=True, slots=True)
class _XzPiece:
    header: bytes
    blocks: bytes
    records: list[tuple[int, int]]


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7


def _put_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _xz_piece(data: bytes) -> _XzPiece:
    stream = _xz(data)
    backward = struct.unpack_from("<I", stream, len(stream) - 8)[0]
    index = len(stream) - 12 - (backward + 1) * 4
    count, at = _varint(stream, index + 1)
    records = []
    for _ in range(count):
        unpadded, at = _varint(stream, at)
        uncompressed, at = _varint(stream, at)
        records.append((unpadded, uncompressed))
    return _XzPiece(stream[:12], stream[12:index], records)


def _xz_join(pieces: Sequence[_XzPiece]) -> bytes:
    records = [record for piece in pieces for record in piece.records]
    index = bytearray(b"\x00" + _put_varint(len(records)))
    for unpadded, uncompressed in records:
        index += _put_varint(unpadded) + _put_varint(uncompressed)
    index += b"\x00" * (-len(index) % 4)
    index += struct.pack("<I", zlib.crc32(index))
    header = pieces[0].header
    flags = header[6:8]
    backward = struct.pack("<I", len(index) // 4 - 1)
    footer = struct.pack("<I", zlib.crc32(backward + flags)) + backward + flags + b"YZ"
    return header + b"".join(piece.blocks for piece in pieces) + bytes(index) + footer


# bzip2: "BZh" and the level, then blocks (each opens with a 48-bit magic and its CRC),
# then a 48-bit end magic, the combined CRC and zero bits to the byte. Nothing in it is
# byte-aligned after the first block, so a piece is kept as one big integer of its bits.

_BLOCK = 0x314159265359
_END = 0x177245385090


@dataclass(frozen=True, slots=True)
class _Bz2Piece:
    bits: int
    length: int
    crc: int


def _bz2_piece(data: bytes) -> _Bz2Piece | None:
    """The one block of a piece's stream; None when it made more than one, or none."""
    stream = _bz2(data)
    value = int.from_bytes(stream[4:], "big")
    total = 8 * (len(stream) - 4)
    for pad in range(8):
        end = value >> pad
        if (end >> 32) & (1 << 48) - 1 == _END and not value & (1 << pad) - 1:
            combined = end & 0xFFFFFFFF
            length = total - pad - 80
            if length <= 80:
                return None
            block = end >> 80
            if block >> (length - 48) != _BLOCK:
                return None
            crc = (block >> (length - 80)) & 0xFFFFFFFF
            # One block: the combined CRC is the block's own (rotated from zero).
            return _Bz2Piece(block, length, crc) if crc == combined else None
    return None


def _bz2_join(pieces: Sequence[_Bz2Piece | None]) -> bytes:
    combined = 0
    out = bytearray(b"BZh9")
    used = 0
    """Bits of ``out``'s last byte that are taken (0: it is full)."""

    def put(bits: int, length: int) -> None:
        nonlocal used
        if used:
            bits |= (out.pop() >> (8 - used)) << length
            length += used
        full, used = divmod(length, 8)
        if used:
            out.extend((bits << (8 - used)).to_bytes(full + 1, "big"))
        else:
            out.extend(bits.to_bytes(full, "big"))

    for piece in pieces:
        if piece is None:
            raise _DoesNotFit
        combined = ((combined << 1 | combined >> 31) & 0xFFFFFFFF) ^ piece.crc
        put(piece.bits, piece.length)
    put(_END << 32 | combined, 80)
    return bytes(out)


class _DoesNotFit(Exception):
    """A piece that is not one bzip2 block: the text is compressed whole."""


FORMATS: dict[str, Format] = {
    ".gz": Format(_gzip, b"".join, _gzip),
    ".xz": Format(_xz_piece, _xz_join, _xz),
    ".bz2": Format(_bz2_piece, _bz2_join, _bz2),
    ".zst": Format(_zstd, b"".join, _zstd),
}
"""Each compressed ``Packages`` file's suffix and format (deterministic: no names, no times).

The levels are chosen for a rebuild of Debian main's size within seconds
(docs/benchmarks.md, "The served repository"): xz at preset 6 and zstd at level 19
took 56 s and 77 s of one CPU for 63 MB of text and bought a few per cent of size."""


def join(suffix: str, pieces: Sequence[Any], text: bytes) -> bytes:
    """One compressed file of ``text`` from its pieces compressed by ``FORMATS[suffix]``."""
    form = FORMATS[suffix]
    if not pieces:
        return form.whole(text)
    try:
        return form.join(pieces)
    except _DoesNotFit:
        return form.whole(text)
