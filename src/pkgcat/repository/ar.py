"""The ar archive a .deb is, read member by member from its file, never whole.

The common ar format, the only one deb(5) allows: the magic ``!<arch>\\n``, then
for each member a header of 60 bytes (name 16, modification time 12, owner 6,
group 6, mode 8, size 10, then ``\\`\\n``), the member's bytes, and one byte of
padding (``\\n``) after an odd size, so that every header starts at an even
offset. A name may end with ``/`` (GNU ar), which is dropped, and a size is
decimal digits padded with spaces: dpkg reads them so (lib/dpkg/ar.c,
``dpkg_ar_normalize_name`` and ``dpkg_ar_member_get_size``).

A member is whole when its header, all the bytes its size declares and its
padding are in the file; anything less raises :class:`ArError`, as dpkg-deb
refuses an archive "truncated or corrupt, expected more data than available"
(src/deb/extract.c, ``extracthalf``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

MAGIC = b"!<arch>\n"
HEADER = 60
_END = b"`\n"
"""The last two bytes of every member header (``ar_fmag``)."""
READ = 64 * 1024
"""Bytes of a member read at a time: the decoders hold a piece of input beside their output."""


class ArError(Exception):
    """The file is not a whole ar archive; the message says where it is not."""


@dataclass(frozen=True, slots=True)
class Member:
    """One member's header, and where its bytes are in the file."""

    name: str
    """As dpkg reads it: trailing spaces and a final ``/`` dropped."""
    size: int
    _file: BinaryIO
    _offset: int

    def chunks(self) -> Iterator[bytes]:
        """The member's bytes, in pieces of at most :data:`READ` bytes."""
        self._file.seek(self._offset)
        left = self.size
        while left:
            chunk = self._file.read(min(left, READ))
            if not chunk:  # the file shrank since its size was read
                raise ArError(f"{self.name!r} ends {left} bytes before its declared size")
            left -= len(chunk)
            yield chunk

    def read(self) -> bytes:
        """The member's bytes at once: only for a member whose size was bounded first."""
        return b"".join(self.chunks())


def _name(field: bytes) -> str:
    name = field.rstrip(b" ")
    return (name[:-1] if name.endswith(b"/") else name).decode("latin-1")


def members(file: BinaryIO) -> Iterator[Member]:
    """Each member of the ar archive in ``file``, checked whole before it is given.

    The caller may read a member's bytes or not: the next header is read after
    it and its padding whatever was read. :class:`ArError` when the file is not an
    ar archive, a header is damaged or cut short, or a member's bytes are not all there.
    """
    end = os.fstat(file.fileno()).st_size
    file.seek(0)
    if file.read(len(MAGIC)) != MAGIC:
        raise ArError("not an ar archive")
    offset = len(MAGIC)
    while offset < end:
        file.seek(offset)
        header = file.read(HEADER)
        if len(header) < HEADER:
            raise ArError(
                f"cut short: {len(header)} bytes after the last member, not a member header"
            )
        name = _name(header[:16])
        if header[58:] != _END:
            raise ArError(f"a damaged member header at byte {offset} (no ar header magic)")
        size_field = header[48:58].strip(b" ")
        if not size_field.isdigit():
            raise ArError(f"member {name!r} has no decimal size ({bytes(header[48:58])!r})")
        size = int(size_field)
        start = offset + HEADER
        offset = start + size + (size & 1)
        if offset > end:
            raise ArError(
                f"cut short: member {name!r} declares {size} bytes"
                f"{' and a byte of padding' if size & 1 else ''}, {max(end - start, 0)} are there"
            )
        yield Member(name, size, file, start)
