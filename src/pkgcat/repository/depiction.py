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
from pkgcat.repository.shop_view import compatibility, day, links
from pkgcat.storage.served import ServedFile, ShopView

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


def _screenshots(file: ServedFile, view: ShopView | None, media: str | None) -> list[str]:
    """The uploaded screenshots when the seller set some, else the catalogue's."""
    if view is not None and view.page is not None and view.page.screenshots and media:
        return [f"{media}{name}" for name in view.page.screenshots]
    return [url for url in orjson.loads(file.screenshots or "[]") if isinstance(url, str)]


def price_text(file: ServedFile, view: ShopView | None, on_sale: bool) -> str:
    """The price a depiction shows: the sale's while it runs (with the list price and its end)."""
    if not file.price:
        return "Paid"
    if on_sale and view is not None and view.sale is not None:
        sale = view.sale
        return (
            f"{sale.price} {file.currency} (sale until {day(sale.ends_at)}; "
            f"was {file.price} {file.currency})"
        )
    return f"{file.price} {file.currency}"


def depiction(
    file: ServedFile,
    view: ShopView | None = None,
    on_sale: bool = False,
    media: str | None = None,
) -> bytes:
    """The depiction of ``file``'s package, as JSON bytes: with what its seller set
    (``view``: screenshots, compatibility, links, changelogs; the sale while ``on_sale``)."""
    text = file.description
    if file.long_description:
        text += "\n\n" + file.long_description
    views: list[dict[str, Any]] = [
        {"class": "DepictionHeaderView", "title": file.name},
        {"class": "DepictionMarkdownView", "markdown": markdown(text), "useSpacing": True},
    ]
    screenshots = [
        {"url": url, "accessibilityText": file.name} for url in _screenshots(file, view, media)
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
    if compatible := compatibility(view):
        views.append(_row("Compatibility", compatible))
    if file.paid:
        views.append(_row("Price", price_text(file, view, on_sale)))
    for title, url in links(view):
        # Sileo's button opens its ``action`` (DepictionTableButtonView).
        views.append({"class": "DepictionTableButtonView", "title": title, "action": url})
    tabs = [{"tabname": "Details", "class": "DepictionStackView", "views": views}]
    if view is not None and view.changelogs:
        notes: list[dict[str, Any]] = []
        for version, text in view.changelogs:
            notes.append({"class": "DepictionSubheaderView", "title": f"Version {version}"})
            notes.append(
                {"class": "DepictionMarkdownView", "markdown": markdown(text), "useSpacing": True}
            )
        tabs.append({"tabname": "Changelog", "class": "DepictionStackView", "views": notes})
    root: dict[str, Any] = {"minVersion": MIN_VERSION, "class": "DepictionTabView", "tabs": tabs}
    if view is not None and view.page is not None and view.page.header and media:
        root["headerImage"] = f"{media}{view.page.header}"
    return orjson.dumps(root)
