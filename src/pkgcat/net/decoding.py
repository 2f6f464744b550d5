"""gzip decoded in bounded pieces: what arrives is never expanded whole.

A 64 KiB piece of gzip can expand to 64 MiB, and zlib's ``decompress`` hands it
all back at once. :class:`Inflater` asks zlib for at most :data:`PIECE` bytes at a
time (``max_length``), so whoever counts the pieces stops a bomb one piece past
its cap, whatever the ratio. It reads concatenated gzip members, as ``gunzip``
and :func:`gzip.decompress` do.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

PIECE = 1024 * 1024
"""The most bytes a decoder hands back at once."""
_GZIP = 16 + zlib.MAX_WBITS


class Inflater:
    """gzip data fed in pieces, given back in pieces of at most :data:`PIECE` bytes."""

    def __init__(self) -> None:
        self._zlib = zlib.decompressobj(_GZIP)
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The bytes ``data`` decodes to, as far as it goes; ``zlib.error`` for bad data."""
        while data:
            if self._zlib.eof:
                # Another member follows; padding of zero bytes after the last one is allowed.
                if not data.strip(b"\0"):
                    return
                self._zlib = zlib.decompressobj(_GZIP)
            self._started = True
            piece = self._zlib.decompress(data, PIECE)
            data = self._rest()
            if piece:
                yield piece
            # A full piece may leave output pending with no input left: ask again, with none.
            while len(piece) == PIECE and not data and not self._zlib.eof:
                piece = self._zlib.decompress(b"", PIECE)
                data = self._rest()
                if piece:
                    yield piece

    def _rest(self) -> bytes:
        """The input not decoded yet: past the member's end, or held back by ``max_length``.

        A member whose last piece fills ``max_length`` leaves what follows it in both
        ``unused_data`` and ``unconsumed_tail`` (CPython's Modules/zlibmodule.c): it is
        taken once, from the first.
        """
        return self._zlib.unused_data if self._zlib.eof else self._zlib.unconsumed_tail

    def end(self) -> None:
        """``EOFError`` when the data stopped inside a member."""
        if self._started and not self._zlib.eof:
            raise EOFError("the data ends before the end of its last member")
