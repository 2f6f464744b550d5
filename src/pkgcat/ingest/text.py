"""What text the catalogue may hold: one rule, the same on SQLite and PostgreSQL.

PostgreSQL's text cannot hold a NUL character, where SQLite stores one; other
control characters are stored by both, then printed raw into terminals and
files. So nothing that comes in holds a control character (Unicode category
Cc: C0 ``U+0000``-``U+001F``, DEL ``U+007F``, C1 ``U+0080``-``U+009F``),
except tab, line feed and carriage return in a stanza, whose values may run
over several lines:

- a stanza of an index that holds one is skipped, with the reason naming the
  character, its line and its field (:meth:`pkgcat.ingest.control.Mapper.map`);
- a value of an operator file (purchases, stats, prices) that holds one is a
  problem of that file, which is refused whole (:mod:`pkgcat.ingest.operator_files`);
- a Release's ``Origin``, ``Label`` or ``Suite`` that holds one is not used, with a warning.

Nothing is silently removed: a value is stored as it came, or not at all.
"""

from __future__ import annotations

import re
import unicodedata

_IN_LINE = re.compile("[\x00-\x1f\x7f-\x9f]")
_IN_STANZA = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]")
"""The same characters in a stanza's UTF-8 bytes, tab, line feed and carriage return apart
(in valid UTF-8, 0xC2 followed by 0x80-0x9F is always one of U+0080-U+009F)."""
_NAMES = {"\0": "NUL", "\x1b": "ESC", "\x7f": "DEL", "\t": "TAB", "\n": "LF", "\r": "CR"}


def describe(character: str) -> str:
    """A control character as messages name it: ``U+001B (ESC)``."""
    name = _NAMES.get(character) or unicodedata.name(character, "")
    return f"U+{ord(character):04X}" + (f" ({name})" if name else "")


def control_in_line(value: str) -> str | None:
    """The first control character of a one-line value, described; ``None`` when it has none."""
    found = _IN_LINE.search(value)
    return None if found is None else describe(found.group())


def control_in_stanza(raw: bytes) -> tuple[str, int] | None:
    """The first control character of a stanza (UTF-8) other than tab, LF and CR, and its offset."""
    found = _IN_STANZA.search(raw)
    if found is None:
        return None
    return describe(found.group().decode("utf-8")), found.start()
