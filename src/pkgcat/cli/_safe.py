"""What the commands print is shown, never obeyed: by a terminal or by a spreadsheet.

Values in the catalogue come from others (buyers' nicknames and transaction ids from
storefronts, names and descriptions from repositories), and a server that
``pkgcat client`` reads may send anything. So:

- :func:`visible` writes every control character (Unicode Cc: C0, DEL, C1) and the
  bidirectional overrides (U+202A-U+202E, U+2066-U+2069) as an escape, ``\\x1b`` or
  ``\\u202e``: an ``ESC]2;...`` in a nickname shows as text instead of retitling the
  terminal, ``ESC[2J`` does not clear it, and a right-to-left override cannot make a
  line read otherwise than it is. Tables keep line feeds (a long description's lines)
  and plain lines escape them (:func:`pkgcat.cli._tables.plain_line`);
- :func:`spreadsheet_cell` defuses formulas the way OWASP's "CSV Injection" page says:
  a value starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a
  leading ``'``, so a spreadsheet shows it as text instead of running it. A plain
  number (``-1.50``) is left as it is: it is no formula, and stays a number.
"""

from __future__ import annotations

import re

from rich.text import Text

_HIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Characters a terminal obeys or that reorder text; line feed apart."""
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?\d+(\.\d+)?")


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character but line feed written as an escape."""
    return _HIDDEN.sub(_escape, text)


def cell(value: object) -> Text:
    """A table cell: the value as plain text (no markup), its control characters visible."""
    return Text(visible(str(value)))


def spreadsheet_cell(text: str) -> str:
    """A CSV value a spreadsheet shows as text: a leading ``'`` before a formula's first sign."""
    if text.startswith(_FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text
