"""Packages files joined from pieces compressed one by one: one ordinary file of each format,
read whole by Python's decompressors, by a one-stream reader, and by apt's own reader."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest
import zstandard

from pkgcat.repository.pieces import FORMATS, MOST_BYTES, cut, join

APT_HELPER = Path("/usr/lib/apt/apt-helper")
"""apt's helper: ``cat-file`` reads a file through the same code as ``apt-get update``."""


def _stanzas(count: int, size: int = 600) -> list[tuple[str, bytes]]:
    stanzas = []
    for n in range(count):
        digest = hashlib.sha256(f"{n}".encode()).hexdigest()
        words = " ".join(secrets.token_hex(4) for _ in range(size // 9))
        stanzas.append((digest, f"Package: p{n}\nDescription: {words}\n".encode()))
    return stanzas


def _text(stanzas: list[tuple[str, bytes]]) -> bytes:
    return b"\n".join(stanza for _, stanza in stanzas)


def _first_stream(suffix: str, data: bytes) -> bytes:
    """What a reader of one stream (apt's, for bzip2 and xz) reads; the rest must be empty."""
    if suffix in (".bz2", ".xz"):
        one = bz2.BZ2Decompressor() if suffix == ".bz2" else lzma.LZMADecompressor()
        out = one.decompress(data)
        assert one.eof
        assert one.unused_data == b""
        return out
    if suffix == ".gz":
        return gzip.decompress(data)
    with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as reader:
        return reader.read()


def test_the_pieces_are_the_text_cut_between_stanzas_where_the_digests_say() -> None:
    stanzas = _stanzas(2000)
    pieces = cut(stanzas, every=64)
    assert b"".join(pieces) == _text(stanzas)
    assert 10 < len(pieces) < 100
    # A stanza changed in the middle changes one piece, no other.
    changed = list(stanzas)
    changed[1000] = (changed[1000][0], changed[1000][1] + b"Tag: changed\n")
    assert len(set(cut(changed, every=64)) - set(pieces)) == 1
    # However few cuts the digests make, no piece is longer than MOST_BYTES and a stanza.
    assert max(len(piece) for piece in cut(stanzas, every=10**9)) < MOST_BYTES + 1000


@pytest.mark.parametrize("suffix", sorted(FORMATS))
def test_a_file_joined_from_pieces_is_one_stream_of_the_whole_text(
    suffix: str, tmp_path: Path
) -> None:
    stanzas = _stanzas(3000)
    text = _text(stanzas)
    pieces = cut(stanzas, every=50)
    assert len(pieces) > 20
    form = FORMATS[suffix]
    joined = join(suffix, [form.piece(piece) for piece in pieces], text)
    assert _first_stream(suffix, joined) == text
    assert join(suffix, [], b"") == form.whole(b"")
    assert APT_HELPER.exists() or shutil.which("apt-get") is None
    if APT_HELPER.exists():  # apt's own reader takes it whole
        (tmp_path / f"Packages{suffix}").write_bytes(joined)
        read = subprocess.run(
            [str(APT_HELPER), "cat-file", str(tmp_path / f"Packages{suffix}")],
            capture_output=True,
            check=True,
        )
        assert read.stdout == text
