"""Control fields that clients render as links or rich text, and what they may hold.

A Packages stanza is text, but clients take some of its fields further:

- as addresses they open or load: ``Depiction`` (Zebra v1 stores it as it came,
  ``Zebra/Parsel/parsel.c`` ``bindPackage``, and loads it in a web view),
  ``SileoDepiction``, ``Icon``, ``Header``, ``Homepage``, ``Support``, ``Bugs``,
  ``Vcs-Browser`` (:data:`LINK_FIELDS`);
- as Markdown or HTML: ``Description`` (Zebra reads it with
  ``initWithMarkdownString:``), and a native depiction's ``markdown``, which Sileo
  turns into HTML (``DepictionMarkdownView``: Down, or ``useRawFormat`` as HTML
  itself; ``DepictionMarkdownViewSlow`` reads the string as HTML). ``Name``,
  ``Author`` and ``Maintainer`` are shown beside them (:data:`TEXT_FIELDS`).

So a seller's .deb, or an imported repository, could put a ``javascript:`` address,
``<script>`` or ``<img onerror=...>`` where a client renders it. The rules:

- a link field is one absolute URL: scheme ``https`` (an imported repository's
  ``http`` too, see below), a host, and none of the characters that end a URL where
  clients embed it in HTML or Markdown (white space, line breaks, quotes, ``<>``,
  backslash, backtick, ``{|}^``) nor any control character: never ``javascript:``,
  ``data:``, ``file:`` or a relative address;
- a text field holds no HTML markup (a ``<`` that opens a tag, comment or
  declaration: followed by a letter, ``/``, ``!`` or ``?``, as HTML's tokenizer
  reads it, WHATWG HTML 13.2.5.6 "Tag open state"), no Markdown link whose address
  breaks the link rule (``[x](javascript:...)``, ``[x]: data:...``), and no
  U+2028 or U+2029, line breaks to parsers that split on Unicode newlines (Swift's
  ``newlines``, Python's ``str.splitlines``) and so a way to forge a field.

``http``: the seller's upload must use https (:func:`upload_problem` refuses
anything else); an imported repository's old ``http://`` links are kept, as every
client read them from that repository already, and a dangerous scheme never is.

Where the rules apply: an upload that breaks one is refused naming the field
(:func:`upload_problem`); a stanza of an imported or mirrored repository keeps its
package and loses what breaks them (:func:`neutral_text`, :func:`clean`); the
native depiction's Markdown is written by :func:`markdown` (every character that
could open markup, a link or an entity escaped; https links only).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from debian.deb822 import Deb822

LINK_FIELDS = frozenset(
    name.lower()
    for name in (
        "Depiction", "SileoDepiction", "Icon", "Header", "Homepage", "Support", "Bugs",
        "Vcs-Browser",
    )
)  # fmt: skip
"""Fields clients open or load as an address (lower-case)."""
TEXT_FIELDS = frozenset(name.lower() for name in ("Name", "Author", "Maintainer", "Description"))
"""Fields clients show as text, Markdown or HTML (lower-case)."""

_UNSAFE_IN_URL = re.compile(r"[\s\"'<>\\^`{|}\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""What ends a URL embedded in HTML or Markdown, or breaks a line (``\\s`` is Unicode's)."""
_TAG = re.compile(r"<[A-Za-z/!?][^<>\n]*>?")
"""An HTML tag, end tag, comment, declaration or processing instruction: from the ``<``
that opens it to its ``>`` (or to the end of its line, when it has none)."""
_INLINE_LINK = re.compile(r"\]\(\s*<?([^\s<>()]*)")
"""The start of a Markdown inline link's or image's destination, ``](address`` (CommonMark
6.3), read loosely: what follows the bracket must itself be an allowed address."""
_REFERENCE = re.compile(r"^ {0,3}\[[^\]\n]*\]:\s*<?([^\s<>]*)", re.MULTILINE)
"""The start of a Markdown link reference definition, ``[label]: address`` (CommonMark 4.7)."""
_ADDRESS = re.compile(r"<[^\s<>\"'`=/]+@[^\s<>\"'`=/]+>")
"""An email address in angle brackets, as ``Maintainer: Name <address>`` holds one: to HTML
a tag of an unknown name without attributes, so no markup that can do anything."""
_SEPARATORS = re.compile("[\u2028\u2029]")
_SUSPECT = re.compile("<|\\]\\(|\\]:|[\u2028\u2029]")
"""Anything :func:`neutral_text` may change: most values have none of it."""
_LINE_BREAKS = re.compile("\r(?!\n)|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
"""Characters that ``str.splitlines`` (and so python-debian reading a text) takes as a line
break, besides LF and CRLF: in a control file, a way to start a field inside another."""


def link_problem(value: str, *, https_only: bool) -> str | None:
    """Why ``value`` is not a link a client may open (``"must be an https URL"``); None if it is."""
    want = "must be an https URL" if https_only else "must be an http(s) URL"
    value = value.strip()
    if not value or _UNSAFE_IN_URL.search(value):
        return want
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:  # a malformed IPv6 host, or port
        return want
    schemes = ("https",) if https_only else ("https", "http")
    if parts.scheme.lower() not in schemes or not host:
        return want
    return None


def _markdown_links(text: str) -> list[str]:
    return [m.group(1) for m in _INLINE_LINK.finditer(text)] + [
        m.group(1) for m in _REFERENCE.finditer(text)
    ]


def _markup(value: str) -> str | None:
    """The first piece of HTML markup in ``value`` (an email address in brackets is none)."""
    for found in _TAG.finditer(value):
        if not _ADDRESS.fullmatch(found.group()):
            return found.group()
    return None


def _unmarked(found: re.Match[str]) -> str:
    return found.group() if _ADDRESS.fullmatch(found.group()) else ""


def text_problem(value: str) -> str | None:
    """Why ``value`` may not be a text field a client renders; None when it may."""
    shown = _markup(value)
    if shown is not None:
        return f"holds HTML markup ({shown[:40]!r}); control fields are plain text"
    for address in _markdown_links(value):
        if link_problem(address, https_only=True) is not None:
            return f"holds a Markdown link to {address[:80]!r}, which is not an https URL"
    if _SEPARATORS.search(value):
        return "holds U+2028 or U+2029, a line break to some clients"
    return None


def upload_problem(name: str, value: str) -> str | None:
    """Why a seller's control field ``name`` may not hold ``value``: the refusal, naming it."""
    key = name.lower()
    if key in LINK_FIELDS:
        problem = link_problem(value, https_only=True)
        return None if problem is None else f"{name}: {problem}, not {value.strip()[:80]!r}"
    if key in TEXT_FIELDS:
        problem = text_problem(value)
        return None if problem is None else f"{name}: {problem}"
    return None


def line_break_problem(text: str) -> str | None:
    """Why a control file's text may not be read as it stands: a line break other than LF."""
    found = _LINE_BREAKS.search(text)
    if found is None:
        return None
    line = text.count("\n", 0, found.start()) + 1
    return f"line {line} holds U+{ord(found.group()):04X}, a line break inside a line"


def neutral_text(value: str) -> str:
    """``value`` without HTML markup, without Markdown links to anything but http(s), and with
    U+2028/U+2029 as spaces: what an imported text field becomes."""
    if not _SUSPECT.search(value):
        return value
    value = _SEPARATORS.sub(" ", value)
    # Removing a tag may join two halves into a new one (``<<b>script>``): again until none.
    while (stripped := _TAG.sub(_unmarked, value)) != value:
        value = stripped

    def unlinked(found: re.Match[str]) -> str:
        # ``] (`` and ``] :`` are no link and no definition: the text stays, the link goes.
        text = found.group()
        if link_problem(found.group(1), https_only=False) is None:
            return text
        at = text.index("]") + 1
        return text[:at] + " " + text[at:]

    return _REFERENCE.sub(unlinked, _INLINE_LINK.sub(unlinked, value))


def clean(paragraph: Deb822) -> list[str]:
    """Make an imported stanza's rendered fields safe, in place: a link field that breaks the
    rule is removed, a text field loses its markup (and goes, if that was all of it). The
    names of the fields changed."""
    changed = []
    for name in list(paragraph):
        key = name.lower()
        value = paragraph[name]
        if key in LINK_FIELDS and link_problem(value, https_only=False) is not None:
            del paragraph[name]
            changed.append(name)
        elif key in TEXT_FIELDS:
            neutral = neutral_text(value)
            if neutral != value:
                if neutral.strip():
                    paragraph[name] = _continued(neutral)
                else:  # nothing but markup
                    del paragraph[name]
                changed.append(name)
    return changed


def _continued(value: str) -> str:
    """A value whose markup was taken out, still one field: a continuation line left empty
    would end the stanza, so it becomes deb-control(5)'s `` .`` (trailing ones go)."""
    first, *rest = value.split("\n")
    lines = [line if line.strip() else " ." for line in rest]
    while lines and lines[-1] == " .":
        lines.pop()
    return "\n".join([first, *lines])


_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "[": "&#91;", "]": "&#93;"}
_TO_ESCAPE = re.compile("[&<>\\[\\]]")
_HTTPS_LINK = re.compile(r"\[([^\[\]\n]{1,300})\]\((https://[^\s()<>]+)\)")


def _escaped(text: str) -> str:
    return _TO_ESCAPE.sub(lambda found: _ESCAPES[found.group()], text)


def markdown(text: str) -> str:
    """Plain text as Markdown that can open no HTML and no link but an https one.

    ``&``, ``<``, ``>``, ``[`` and ``]`` become character references, which CommonMark
    shows as the characters and never reads as structure (CommonMark 6.2), and which
    a client that takes the string as HTML shows likewise. So no raw HTML, no autolink,
    no image, no reference; only a ``[text](https://...)`` whose address passes
    :func:`link_problem` stays a link.
    """
    out = []
    position = 0
    for found in _HTTPS_LINK.finditer(text):
        address = found.group(2)
        if link_problem(address, https_only=True) is not None:
            continue
        out.append(_escaped(text[position : found.start()]))
        out.append(f"[{_escaped(found.group(1))}]({address})")
        position = found.end()
    out.append(_escaped(text[position:]))
    return "".join(out)


_SAFE_LINK = re.compile(
    r"[ \t]*https?://[^\s\"'<>\\^`{|}/?#@\x00-\x1f\x7f-\x9f]+"
    r"(?:[/?#][^\s\"'<>\\^`{|}\x00-\x1f\x7f-\x9f]*)?[ \t]*"
)
"""A link value that surely passes :func:`link_problem` (one with ``@`` is looked at closely)."""
_LINK_INITIALS = frozenset(name[0] for name in LINK_FIELDS) | {
    name[0].upper() for name in LINK_FIELDS
}
_MARKUP = re.compile(r"<(?![^\s<>\"'`=/]+@[^\s<>\"'`=/]+>)[A-Za-z/!?]")
"""Markup, but for an ``<address>`` (as :data:`_TAG` and :data:`_ADDRESS` read them)."""


def _suspect(control: str) -> bool:
    """Whether a control paragraph may hold something :func:`clean` changes: a quick look."""
    if any(mark in control for mark in ("](", "]:", "\r", "\u2028", "\u2029")):
        return True
    if _MARKUP.search(control):
        return True
    lines = control.split("\n")
    for number, line in enumerate(lines):
        if line[:1] not in _LINK_INITIALS:
            continue
        name, colon, value = line.partition(":")
        if colon and name.lower() in LINK_FIELDS:
            continued = number + 1 < len(lines) and lines[number + 1][:1] in (" ", "\t")
            if continued or not _SAFE_LINK.fullmatch(value):
                return True
    return False


def served_control(control: str) -> str:
    """A stored control paragraph as an index may serve it: :func:`clean`'s rules applied.

    Rows written before these rules (and any written around them) are made safe when the
    index is built. Most paragraphs are looked at, not parsed: only one that holds
    something a rule may change is read with python-debian, cleaned and written again.
    """
    if not _suspect(control):
        return control
    paragraph = Deb822(control)
    if not clean(paragraph):
        return control
    return paragraph.dump().rstrip("\n")
