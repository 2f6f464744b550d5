"""gzip decoded in bounded pieces, as the fetcher and the importer read it."""

from __future__ import annotations

import gzip
import zlib

import pytest

from pkgcat.net.decoding import PIECE, Inflater


def decoded(*chunks: bytes) -> list[bytes]:
    inflater = Inflater()
    pieces = [piece for chunk in chunks for piece in inflater.feed(chunk)]
    inflater.end()
    return pieces


def test_no_piece_is_larger_than_a_mib_whatever_the_ratio() -> None:
    data = b"\0" * (8 * PIECE + 5)
    pieces = decoded(gzip.compress(data, compresslevel=9))
    assert max(map(len, pieces)) <= PIECE
    assert b"".join(pieces) == data


def test_members_and_zero_padding_read_as_gunzip_reads_them() -> None:
    members = gzip.compress(b"one\n") + gzip.compress(b"two\n")
    assert b"".join(decoded(members + b"\0" * 8)) == b"one\ntwo\n"
    # The same, a byte at a time: the pieces do not depend on how the data arrives.
    assert b"".join(decoded(*(members[i : i + 1] for i in range(len(members))))) == b"one\ntwo\n"


def test_data_cut_short_or_foreign_is_an_error() -> None:
    whole = gzip.compress(b"x" * 10_000)
    with pytest.raises(EOFError, match="before the end of its last member"):
        decoded(whole[: len(whole) // 2])
    with pytest.raises(zlib.error):
        decoded(b"not gzip at all")


def test_a_member_that_ends_on_a_piece_boundary_is_followed_by_the_next_once() -> None:
    # When a member's last piece fills max_length, zlib leaves what follows the member in both
    # unconsumed_tail and unused_data (CPython's Modules/zlibmodule.c): read once, not twice.
    one, two = b"\0" * (2 * PIECE), b"\1" * (2 * PIECE)
    members = gzip.compress(one) + gzip.compress(two) + gzip.compress(b"end\n")
    inflater, out = Inflater(), bytearray()
    for piece in inflater.feed(members):
        out += piece
        size = len(out)
        assert size <= 4 * PIECE + 4, "more bytes than the members hold"
    inflater.end()
    assert bytes(out) == one + two + b"end\n"
