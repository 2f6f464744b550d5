"""A package's page set by its seller, on SQLite and PostgreSQL: checked field by field,
written whole or not at all, in the history and the webhooks' outbox, and followed by the
Packages stanza and both depictions at the next rebuild."""

from __future__ import annotations

import io
import struct
import zlib

import anyio
import orjson
import pytest
from PIL import Image as Pillow
from sqlalchemy import Engine

from pkgcat.shop import pages
from pkgcat.shop.errors import ShopRefused
from pkgcat.storage.blobs import DirectoryBlobs
from pkgcat.storage.shop.log import history
from tests.backends import rows
from tests.conftest import Api
from tests.repository.test_served import stanzas, wait_for
from tests.shop.conftest import ALPHA, NOW, REPO

SELLER = "seller:alpha-a"
LONG = "Adds **bold** things.\n\n- one\n- two\n\nSee [the guide](https://example.com/guide)."


def _png(width: int = 8, height: int = 8) -> bytes:
    out = io.BytesIO()
    Pillow.new("RGB", (width, height), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def _jpeg() -> bytes:
    out = io.BytesIO()
    Pillow.new("RGB", (8, 8)).save(out, "JPEG")
    return out.getvalue()


def _bomb(width: int, height: int) -> bytes:
    """A tiny PNG whose header declares ``width`` x ``height`` (its data a few zeros)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 1024)) + chunk(b"IEND", b"")
    )  # fmt: skip


def _stanza(api: Api, package: str) -> dict[str, str]:
    found = [s for s in stanzas(api.http.get("/repo/Packages").content) if s["Package"] == package]
    assert found, package
    return dict(found[0])


def test_an_edit_is_served_in_the_stanza_and_both_depictions_and_kept_in_the_history(
    shop: Api, engine: Engine, database_url: str
) -> None:
    assert _stanza(shop, "com.alpha.other").get("Name") is None  # the .deb names none
    with engine.begin() as db:  # a webhook endpoint, so the change is an event too
        db.exec_driver_sql(
            "INSERT INTO webhook_endpoints (endpoint_id, application_id, source_id, url, events,"
            " enabled, sealed_secret, position, next_attempt_ms, attempts, created_at, updated_at)"
            " VALUES ('we_1', 1, 1, 'https://hooks.example/x', '[]', true, 'x', 0, 0, 0, 0, 0)"
        )
    page = pages.edit_page(
        engine, ALPHA, "com.alpha.other",
        {"name": "Other Pro", "description": "Does more", "long_description": LONG,
         "section": "Utilities", "compatible": ["iOS 16", "iOS 15"], "min_ios": "15.0",
         "max_ios": "17.4", "support_url": "https://example.com/help"},
        actor=SELLER, now=NOW,
    )  # fmt: skip
    assert page.compatible == ("iOS 15", "iOS 16")
    wait_for(lambda: _stanza(shop, "com.alpha.other").get("Name") == "Other Pro", "the name")
    stanza = _stanza(shop, "com.alpha.other")
    assert stanza["Section"] == "Utilities"
    assert stanza["Description"].splitlines()[0] == "Does more"
    assert stanza["SileoDepiction"] == f"{REPO}depictions/com.alpha.other.json"
    native = orjson.loads(shop.http.get("/repo/depictions/com.alpha.other.json").content)
    views = native["tabs"][0]["views"]
    assert views[0] == {"class": "DepictionHeaderView", "title": "Other Pro"}
    assert "**bold**" in views[1]["markdown"]  # Markdown, for Sileo to render
    rows_shown = {
        v.get("title"): v.get("text") for v in views if v["class"] == "DepictionTableTextView"
    }
    assert rows_shown["Compatibility"] == "iOS 15.0 to 17.4"
    assert {"class": "DepictionTableButtonView", "title": "Support",
            "action": "https://example.com/help"} in views  # fmt: skip
    web = shop.http.get("/repo/depictions/com.alpha.other.html").text
    assert "<strong>bold</strong>" in web
    assert '<a href="https://example.com/guide">the guide</a>' in web
    assert "<li>one</li>" in web
    details = shop.get(
        "/1.0/package/details.json", shop.keys["alpha-a"], package="com.alpha.other"
    ).json()
    assert details["response"]["name"] == "Other Pro", details
    entries = history(engine, ALPHA, "com.alpha.other")
    assert [(e.actor, e.change) for e in entries] == [(SELLER, "package.page_changed")]
    assert entries[0].facts["fields"]["section"] == "Utilities"
    events = rows(database_url, "SELECT type, data FROM webhook_events WHERE source_id = 1")
    assert [e[0] for e in events] == ["package.page_changed"]
    assert orjson.loads(str(events[0][1]))["by"] == SELLER
    # Back to the .deb's name: null clears the field.
    pages.edit_page(engine, ALPHA, "com.alpha.other", {"name": None}, actor=SELLER, now=NOW + 1)
    wait_for(lambda: _stanza(shop, "com.alpha.other").get("Name") != "Other Pro", "the .deb's name")


@pytest.mark.parametrize(
    ("values", "field", "says"),
    [
        ({"name": "Fine", "support_url": "http://example.com"}, "support_url", "https"),
        ({"source_url": "javascript:alert(1)"}, "source_url", "https"),
        ({"long_description": "Hi <script>alert(1)</script>"}, "long_description", "markup"),
        ({"long_description": "[x](javascript:alert(1))"}, "long_description", "Markdown link"),
        ({"name": "Two\nlines"}, "name", "LF"),
        ({"compatible": ["iOS 99"]}, "compatible", "label"),
        ({"min_ios": "16.0", "max_ios": "15.0"}, "max_ios", "below"),
        ({"colour": "red"}, "colour", "not a field"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_nothing_is_written(
    engine: Engine, database_url: str, values: dict[str, object], field: str, says: str
) -> None:
    with pytest.raises(ShopRefused) as refused:
        pages.edit_page(engine, ALPHA, "com.alpha.other", values, actor=SELLER, now=NOW)
    assert refused.value.field == field
    assert says in refused.value.message
    assert rows(database_url, "SELECT count(*) FROM package_pages") == [(0,)]
    assert rows(database_url, "SELECT count(*) FROM package_history") == [(0,)]


def test_another_sources_package_is_not_found(engine: Engine) -> None:
    with pytest.raises(ShopRefused) as refused:
        pages.edit_page(engine, ALPHA, "com.beta.paid", {"name": "Mine"}, actor=SELLER, now=NOW)
    assert (refused.value.field, refused.value.kind) == ("package", "missing")


LIMITS = {"max_bytes": 200_000, "max_pixels": 1000 * 1000}


@pytest.mark.parametrize(
    ("data", "claimed", "says"),
    [
        (b"GIF89a not a png at all", "image/png", "is not a PNG"),
        (_jpeg(), "image/png", "is not a PNG"),
        (_png(), "image/gif", "must be image/png or image/jpeg"),
        (_png(64, 64)[:70], "image/png", "damaged"),
        (_bomb(30_000, 30_000), "image/png", "pixels"),
        (b"\0" * 300_000, "image/png", "bytes"),
    ],
    ids=["text", "jpeg-as-png", "gif-claimed", "cut-short", "bomb", "too-large"],
)
def test_an_image_that_is_not_what_it_claims_is_refused(
    tmp_path: object, data: bytes, claimed: str, says: str
) -> None:
    blobs = DirectoryBlobs(tmp_path / "blobs")  # type: ignore[operator]  # a Path
    with pytest.raises(ShopRefused) as refused:
        anyio.run(lambda: pages.store_image(blobs, "icon", data, claimed, **LIMITS))
    assert refused.value.field == "icon"
    assert says in refused.value.message
    assert not (tmp_path / "blobs").exists()  # type: ignore[operator]  # nothing stored


def test_an_icon_and_screenshots_are_re_encoded_stored_and_served_with_cache_headers(
    shop: Api, engine: Engine, cli_env: dict[str, str]
) -> None:
    from pathlib import Path

    blobs = DirectoryBlobs(Path(cli_env["PKGCAT_BLOB_DIR"]))
    # Trailing bytes after the image (a polyglot's payload) are not kept: it is re-encoded.
    icon = anyio.run(
        lambda: pages.store_image(blobs, "icon", _png() + b"<script>", "image/png", **LIMITS)
    )
    shot = anyio.run(
        lambda: pages.store_image(blobs, "screenshot", _jpeg(), "image/jpeg", **LIMITS)
    )
    assert (icon.width, icon.height, shot.name[-4:]) == (8, 8, ".jpg")
    pages.set_images(engine, ALPHA, "com.alpha.other", icon=icon, screenshots=[shot],
                     actor=SELLER, now=NOW)  # fmt: skip
    wait_for(lambda: _stanza(shop, "com.alpha.other").get("Icon") == f"{REPO}media/{icon.name}",
             "the uploaded icon")  # fmt: skip
    served = shop.http.get(f"/repo/media/{icon.name}")
    assert served.status_code == 200
    assert served.headers["content-type"] == "image/png"
    assert served.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert served.headers["x-content-type-options"] == "nosniff"
    assert b"<script>" not in served.content
    assert Pillow.open(io.BytesIO(served.content)).size == (8, 8)
    native = orjson.loads(shop.http.get("/repo/depictions/com.alpha.other.json").content)
    shots = [v for v in native["tabs"][0]["views"] if v["class"] == "DepictionScreenshotsView"]
    assert shots[0]["screenshots"][0]["url"] == f"{REPO}media/{shot.name}"
    # A blob that is no page's image (a .deb's digest) is not served as media.
    deb = _stanza(shop, "com.alpha.other")["SHA256"]
    assert shop.http.get(f"/repo/media/{deb}.png").status_code == 404
