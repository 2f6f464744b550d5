"""What a seller's page changes in a served stanza and in the depictions.

A package whose seller set its page is served as the page says: the stanza's ``Name``,
``Section`` and ``Description`` are the page's, its ``Icon`` and ``Header`` the uploaded
images (under ``/repo/media/``), and its ``Depiction`` and ``SileoDepiction`` the
repository's own (the seller edits the page here, so the depictions made here win over
links the .deb carries). Every value was checked when it was set
(:mod:`pkgcat.shop.pages`): text without markup, https links, images re-encoded.

The long description and changelogs are Markdown. In the native depiction they go through
:func:`pkgcat.ingest.rendered.markdown` (Sileo renders Markdown itself: every character that
opens HTML, a link or a reference is escaped, an https link kept). In the web depiction they
are rendered with markdown-it-py's CommonMark, raw HTML off, images off, and only https links
(:func:`html_of`): the page then holds only the tags that renderer writes.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html import escape

from markdown_it import MarkdownIt

from pkgcat.ingest.rendered import link_problem
from pkgcat.storage.served import ServedFile, ShopView

_FIELDS = {"name": "Name", "section": "Section", "description": "Description"}


def _field(name: str) -> re.Pattern[str]:
    return re.compile(rf"^{name}:[^\n]*(?:\n[ \t][^\n]*)*", re.IGNORECASE | re.MULTILINE)


def set_field(control: str, name: str, value: str) -> str:
    """``control`` with the field ``name`` holding ``value`` (replaced where it stood, else
    added at the end); ``value`` may hold continuation lines."""
    line = f"{name}: {value}"
    found = _field(name).search(control)
    if found is None:
        return f"{control}\n{line}"
    return control[: found.start()] + line + control[found.end() :]


def drop_field(control: str, name: str) -> str:
    found = _field(name).search(control)
    if found is None:
        return control
    before, after = control[: found.start()], control[found.end() :]
    return before + after[1:] if after else before[:-1]


def _folded(short: str, long: str) -> str:
    """A Description value: the synopsis, then the long text as deb-control(5) folds it."""
    lines = [f" {line}" if line.strip() else " ." for line in long.strip().splitlines()]
    return "\n".join([short, *lines]) if lines else short


def paged(control: str, file: ServedFile, view: ShopView, media: str | None) -> str:
    """The control paragraph with the page's fields over the .deb's."""
    page = view.page
    if page is None:
        return control
    if page.name is not None:
        control = set_field(control, "Name", file.name)
    if page.section is not None:
        control = set_field(control, "Section", file.section)
    if page.description is not None or page.long_description is not None:
        control = set_field(
            control, "Description", _folded(file.description, file.long_description)
        )
    if media is not None:
        if page.icon:
            control = set_field(control, "Icon", f"{media}{page.icon}")
        if page.header:
            control = set_field(control, "Header", f"{media}{page.header}")
    return control


def takes_over_depictions(view: ShopView | None) -> bool:
    """Whether the repository's depictions replace those the .deb names."""
    return view is not None and view.page is not None


def sale_running(view: ShopView | None, now: int) -> bool:
    return (
        view is not None
        and view.sale is not None
        and view.sale.starts_at <= now < view.sale.ends_at
    )


def day(when: int) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _renderer() -> MarkdownIt:
    renderer = MarkdownIt("commonmark", {"html": False, "linkify": False})
    renderer.disable("image")
    # Only https links are links: any other destination is left as text.
    renderer.validateLink = lambda url: link_problem(url, https_only=True) is None  # type: ignore[method-assign]  # markdown-it-py's documented hook
    return renderer


_MARKDOWN = _renderer()


def html_of(text: str) -> str:
    """A seller's Markdown as HTML: CommonMark's, no raw HTML, no images, https links only."""
    rendered: str = _MARKDOWN.render(text)
    return rendered


def compatibility(view: ShopView | None) -> str:
    """The iOS versions the page says the package supports (``iOS 14.0 to 16.4``), or ""."""
    if view is None or view.page is None:
        return ""
    low, high = view.page.min_ios, view.page.max_ios
    if low and high:
        return f"iOS {low} to {high}"
    if low:
        return f"iOS {low} or later"
    return f"iOS {high} or earlier" if high else ""


def links(view: ShopView | None) -> list[tuple[str, str]]:
    if view is None or view.page is None:
        return []
    found = [("Support", view.page.support_url), ("Source code", view.page.source_url)]
    return [
        (title, url) for title, url in found if url and link_problem(url, https_only=True) is None
    ]


def link_html(title: str, url: str) -> str:
    return f'<a href="{escape(url, quote=True)}" rel="noopener noreferrer">{escape(title)}</a>'
