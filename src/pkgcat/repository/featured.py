"""What a featured banner may show: checked before storage keeps it.

Its image is an address Sileo and Zebra load and its title text they show, so both follow the
rules of fields clients render (:mod:`pkgcat.ingest.rendered`): an https address, plain text.
"""

from __future__ import annotations

from pkgcat.ingest.rendered import link_problem, text_problem
from pkgcat.storage.writes.banners import BannerRefused

TITLE_MAX = 200


def checked(image_url: str, title: str) -> tuple[str, str]:
    """The image and title as kept; :class:`BannerRefused` naming what is wrong."""
    if (problem := link_problem(image_url, https_only=True)) is not None:
        raise BannerRefused(f"image: {problem}")
    title = title.strip()
    if not title or len(title) > TITLE_MAX:
        raise BannerRefused(f"title: 1 to {TITLE_MAX} characters")
    if (problem := text_problem(title)) is not None:
        raise BannerRefused(f"title: {problem}")
    return image_url, title
