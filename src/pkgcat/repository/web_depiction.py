"""A package's web depiction: the page that Zebra (and Cydia, and Sileo without a native one)
opens from a Packages stanza's ``Depiction`` field.

Zebra v1 shows a package's page only from ``Depiction`` (zbrateam/Zebra, branch v1,
``Zebra/Parsel/parsel.c``, lines 376 and 393 at c615ab4, read ``Depiction`` and ``Icon`` and
no ``SileoDepiction``), so every served package gets one, made at the index build from the same
catalogue fields as the native depiction (:mod:`pkgcat.repository.depiction`): name, short and
long description, version, author, section, size, screenshots, and for a paid package its price
and how to buy it from a device.

Every value comes from a seller or an imported repository: each is escaped, the long
description is shown as text (its blank lines make paragraphs, nothing else is interpreted),
and only https screenshots are shown. The page runs no script and loads nothing but its
screenshots (:data:`CONTENT_SECURITY_POLICY`).
"""

from __future__ import annotations

import base64
import hashlib
from html import escape

import orjson

from pkgcat.ingest.rendered import link_problem
from pkgcat.repository.depiction import price_text, size_text
from pkgcat.repository.shop_view import compatibility, html_of, link_html, links
from pkgcat.storage.served import ServedFile, ShopView

STYLE = (
    "body{font:16px/1.5 -apple-system,system-ui,sans-serif;margin:0 auto;max-width:40em;"
    "padding:1em;color:#1c1c1e}h1{font-size:1.5em;margin:.2em 0}p.short{color:#636366}"
    ".price{background:#eef4ff;border-radius:8px;padding:.6em .8em}"
    "table{border-collapse:collapse;width:100%}th{text-align:left;color:#636366;"
    "font-weight:normal;padding:.3em 1em .3em 0}td{padding:.3em 0}"
    ".shots{display:flex;gap:.6em;overflow-x:auto}.shots img{height:22em;border-radius:8px}"
    "@media (prefers-color-scheme:dark){body{background:#000;color:#f2f2f7}"
    ".price{background:#1c2a40}}"
)
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        # The one style, by its digest: no other style, and no script at all.
        f"style-src 'sha256-{base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()}'",
        "img-src https:",
        "base-uri 'none'",
        "form-action 'none'",
    )
)
"""No script, no form; only this page's own style, and screenshots over https."""


def _paragraphs(text: str) -> str:
    blocks = [block.strip() for block in text.replace("\r", "").split("\n\n")]
    return "".join(
        "<p>" + "<br>".join(escape(line) for line in block.splitlines()) + "</p>"
        for block in blocks
        if block
    )


def _screenshots(file: ServedFile, view: ShopView | None, media: str | None) -> list[str]:
    if view is not None and view.page is not None and view.page.screenshots and media:
        return [f"{media}{name}" for name in view.page.screenshots]
    try:
        found = orjson.loads(file.screenshots or "[]")
    except orjson.JSONDecodeError:
        return []
    return [
        url for url in found if isinstance(url, str) and link_problem(url, https_only=True) is None
    ]


def web_depiction(
    file: ServedFile,
    store_name: str | None,
    view: ShopView | None = None,
    on_sale: bool = False,
    media: str | None = None,
) -> bytes:
    """The page of ``file``'s package, as HTML bytes.

    ``store_name``: the store's, when the deployment sells (the page then says how to buy).
    ``view``: what its seller set: a long description and changelogs in Markdown (rendered
    by :func:`~pkgcat.repository.shop_view.html_of`), screenshots, links; its sale while
    ``on_sale``.
    """
    rows = [
        ("Version", file.shown_version),
        ("Author", file.author),
        ("Section", file.section),
        ("Size", size_text(file.size)),
        ("Compatibility", compatibility(view)),
    ]
    table = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows if v)
    buy = ""
    if file.paid:
        price = price_text(file, view, on_sale) if file.price else "Paid (not priced yet)"
        how = (
            f"Buy it from your device in Sileo or Zebra: open this package and tap its price; "
            f"you sign in to {store_name} with your email address."
            if store_name
            else "This repository does not sell it from here."
        )
        buy = f'<p class="price"><strong>{escape(price)}</strong><br>{escape(how)}</p>'
    shots = "".join(
        f'<img src="{escape(url, quote=True)}" alt="{escape(file.name, quote=True)} screenshot">'
        for url in _screenshots(file, view, media)
    )
    seller_page = view is not None and view.page is not None
    if (
        seller_page
        and view is not None
        and view.page is not None
        and view.page.long_description is not None
    ):
        long = html_of(file.long_description)
    else:
        long = _paragraphs(file.long_description)
    found_links = " · ".join(link_html(title, url) for title, url in links(view))
    notes = ""
    if view is not None and view.changelogs:
        notes = "<h2>Changelog</h2>" + "".join(
            f"<h3>Version {escape(version)}</h3>{html_of(text)}"
            for version, text in view.changelogs
        )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(file.name)}</title><style>{STYLE}</style></head><body>"
        f'<h1>{escape(file.name)}</h1><p class="short">{escape(file.description)}</p>{buy}'
        f"{long}"
        + (f'<div class="shots">{shots}</div>' if shots else "")
        + f"<table>{table}</table>"
        + (f"<p>{found_links}</p>" if found_links else "")
        + f"{notes}</body></html>"
    ).encode()
