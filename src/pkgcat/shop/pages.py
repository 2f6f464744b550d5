"""Use cases of a package's page: set its fields, upload its images.

Each field is checked as clients will render it (:mod:`pkgcat.ingest.rendered`): text
without HTML markup and without Markdown links to anything but https, links https only,
single-line text on one line; then the whole edit is written in one transaction
(:func:`pkgcat.storage.shop.pages.set_page`), or nothing when a field is refused.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from pkgcat.ingest.compatible import IOS_MAJORS
from pkgcat.ingest.rendered import link_problem, text_problem
from pkgcat.ingest.text import control_in_line
from pkgcat.shop.errors import ShopRefused
from pkgcat.shop.images import checked
from pkgcat.shop.values import PAGE_FIELDS, Image, Page
from pkgcat.storage.blobs import BlobStore
from pkgcat.storage.shop import pages as stored

LENGTHS = {"name": 200, "description": 300, "long_description": 20_000, "section": 100}
"""The most characters each text field holds."""
SCREENSHOTS = 10
"""The most screenshots a page shows."""
_IOS = re.compile(r"\d{1,2}(?:\.\d{1,2}){0,2}")
_LABEL = re.compile(r"iOS (\d{1,2})")


def _ios_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def check_text(field: str, value: str, *, lines: bool = False) -> str:
    value = value.strip()
    if not value:
        raise ShopRefused(field, "is empty (send null to go back to the .deb's)")
    if len(value) > LENGTHS[field]:
        raise ShopRefused(field, f"is {len(value)} characters; at most {LENGTHS[field]}")
    for line in value.splitlines() if lines else [value]:
        if (bad := control_in_line(line)) is not None:
            raise ShopRefused(field, f"holds {bad}")
    if (problem := text_problem(value)) is not None:
        raise ShopRefused(field, problem)
    return value.replace("\r\n", "\n")


def check_values(values: dict[str, Any]) -> dict[str, Any]:
    """The fields as stored, or :class:`ShopRefused` naming the first one at fault."""
    unknown = sorted(set(values) - set(PAGE_FIELDS))
    if unknown:
        raise ShopRefused(unknown[0], f"is not a field of a page ({', '.join(PAGE_FIELDS)})")
    out: dict[str, Any] = {}
    for field, value in values.items():
        if value is None:
            out[field] = None
        elif field in LENGTHS:
            out[field] = check_text(field, str(value), lines=field == "long_description")
        elif field == "compatible":
            labels = [value] if isinstance(value, str) else list(value)
            majors = []
            for label in labels:
                found = _LABEL.fullmatch(str(label).strip())
                if found is None or int(found[1]) not in IOS_MAJORS:
                    raise ShopRefused(field, f"{str(label)[:40]!r} is not a label such as 'iOS 16'")
                majors.append(int(found[1]))
            out[field] = [f"iOS {major}" for major in sorted(set(majors))]
        elif field in ("min_ios", "max_ios"):
            if not _IOS.fullmatch(str(value)):
                raise ShopRefused(
                    field, f"{str(value)[:40]!r} is not an iOS version such as '15.0'"
                )
            out[field] = str(value)
        else:
            if (problem := link_problem(str(value), https_only=True)) is not None:
                raise ShopRefused(field, f"{problem}, not {str(value)[:80]!r}")
            out[field] = str(value).strip()
    low, high = out.get("min_ios"), out.get("max_ios")
    if low and high and _ios_key(low) > _ios_key(high):
        raise ShopRefused("max_ios", f"{high} is below min_ios {low}")
    return out


def edit_page(
    engine: Engine, source_id: int, package: str, values: dict[str, Any], *, actor: str, now: int
) -> Page:
    """Set some of the page's fields (None: back to the .deb's value); the page as it is now."""
    return stored.set_page(engine, source_id, package, check_values(values), actor=actor, now=now)


async def store_image(
    blobs: BlobStore, field: str, data: bytes, claimed: str, *, max_bytes: int, max_pixels: int
) -> Image:
    """Check and re-encode an uploaded image, and store it by digest beside the .debs."""
    body, suffix, width, height = checked(
        field, data, claimed, max_bytes=max_bytes, max_pixels=max_pixels
    )
    digest = hashlib.sha256(body).hexdigest()
    with tempfile.TemporaryDirectory(prefix="pkgcat-image-") as folder:
        path = Path(folder) / "image"
        path.write_bytes(body)
        await blobs.put(path, digest)
    media_type = "image/png" if suffix == "png" else "image/jpeg"
    return Image(f"{digest}.{suffix}", media_type, width, height, len(body))


def set_images(
    engine: Engine,
    source_id: int,
    package: str,
    *,
    icon: Image | bool | None = False,
    header: Image | bool | None = False,
    screenshots: list[Image] | bool | None = False,
    actor: str,
    now: int,
) -> Page:
    """Name stored images on the page (``False``: unchanged; None: removed)."""
    values: dict[str, Any] = {}
    for field, image in (("icon", icon), ("header", header)):
        if image is not False:
            values[field] = None if image is None or image is True else image.name
    if screenshots is not False:
        shots = [] if screenshots is None or screenshots is True else list(screenshots)
        if len(shots) > SCREENSHOTS:
            raise ShopRefused("screenshots", f"{len(shots)} sent; at most {SCREENSHOTS}")
        values["screenshots"] = [shot.name for shot in shots] or None
    return stored.set_page(engine, source_id, package, values, actor=actor, now=now)


def page(engine: Engine, source_id: int, package: str) -> Page:
    return stored.page(engine, source_id, package)
