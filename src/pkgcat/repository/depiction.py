"""Sileo's native depiction of a package, made from the catalogue's own fields.

Sileo reads a JSON tree of views (``DepictionTabView`` at the root, its tabs
``DepictionStackView``s of Markdown, table rows and screenshots) from the
address a Packages stanza gives as ``SileoDepiction``. The text is the
catalogue's: name, description, author, version, section, size and price.

The description is plain text, and Sileo renders the ``markdown`` as HTML
(``DepictionMarkdownView``: Down's CommonMark; ``DepictionMarkdownViewSlow`` and
``useRawFormat``: the string as HTML itself), so it goes in through
:func:`pkgcat.ingest.rendered.markdown`: no HTML, no link but an https one.
"""

from __future__ import annotations

from typing import Any

import orjson

from pkgcat.ingest.rendered import markdown
from pkgcat.storage.served import ServedFile

MIN_VERSION = "0.1"


def size_text(size: int) -> str:
    """A file's size as a person reads it (``914 bytes``, ``12.5 KB``)."""
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _row(title: str, text: str) -> dict[str, str]:
    return {"class": "DepictionTableTextView", "title": title, "text": text}


def depiction(file: ServedFile) -> bytes:
    """The depiction of ``file``'s package, as JSON bytes."""
    text = file.description
    if file.long_description:
        text += "\n\n" + file.long_description
    views: list[dict[str, Any]] = [
        {"class": "DepictionHeaderView", "title": file.name},
        {"class": "DepictionMarkdownView", "markdown": markdown(text), "useSpacing": True},
    ]
    screenshots = [
        {"url": url, "accessibilityText": file.name}
        for url in orjson.loads(file.screenshots or "[]")
        if isinstance(url, str)
    ]
    if screenshots:
        views.append(
            {
                "class": "DepictionScreenshotsView",
                "itemCornerRadius": 8,
                "itemSize": "{160, 346}",
                "screenshots": screenshots,
            }
        )
    views.append({"class": "DepictionSeparatorView"})
    views += [
        _row("Version", file.shown_version),
        _row("Author", file.author),
        _row("Section", file.section),
        _row("Size", size_text(file.size)),
    ]
    if file.paid:
        views.append(_row("Price", f"{file.price} {file.currency}" if file.price else "Paid"))
    tab = {"tabname": "Details", "class": "DepictionStackView", "views": views}
    return orjson.dumps({"minVersion": MIN_VERSION, "class": "DepictionTabView", "tabs": [tab]})
