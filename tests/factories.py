"""Rows for a test catalogue, with every field filled and overridable."""

from __future__ import annotations

import hashlib
import itertools
from datetime import UTC, datetime
from typing import Any

import orjson

_ids = itertools.count(1)

T0 = datetime(2024, 3, 10, 12, 0, 0, tzinfo=UTC)


def ts(value: datetime) -> int:
    return int(value.timestamp())


def source(id: int, name: str, **over: Any) -> dict[str, Any]:
    row = {
        "id": id,
        "name": name,
        "origin": f"{name} Origin",
        "url": f"https://{name.lower()}.example/",
        "created_at": ts(T0),
    }
    return row | over


def application(id: int, source_id: int, name: str, **over: Any) -> dict[str, Any]:
    row = {
        "id": id,
        "source_id": source_id,
        "name": name,
        "shape": None,
        "timezone": None,
        "created_at": ts(T0),
    }
    return row | over


def package(id: int, source_id: int, ident: str, **over: Any) -> dict[str, Any]:
    blob = ident.encode() * 100
    row = {
        "id": id,
        "package": ident,
        "source_id": source_id,
        "name": ident.rsplit(".", 1)[-1].title(),
        "version": "1.2.3",
        "architecture": "iphoneos-arm64",
        "author": "Ada <ada@example.org>",
        "section": "Tweaks",
        "description": "A short description",
        "long_description": "Line one.\n\nLine two.",
        "pre_depends": "",
        "depends": "firmware (>= 14.0), mobilesubstrate",
        "conflicts": "",
        "replaces": "",
        "size": len(blob),
        "md5sum": hashlib.md5(blob).hexdigest(),  # noqa: S324 - a field of the format
        "sha256": hashlib.sha256(blob).hexdigest(),
        "compatible": orjson.dumps(["iOS 14", "iOS 15"]).decode(),
        "total_download": 1234,
        "total_votes": 10,
        "total_value_votes": 42,
        "online": True,
        "price": "1.99",
        "currency": "USD",
        "icon": f"https://cdn.example/{ident}/icon.png",
        "screenshots": orjson.dumps(
            [f"https://cdn.example/{ident}/1.png", f"https://cdn.example/{ident}/2.png"]
        ).decode(),
        "url": f"https://cdn.example/{ident}/",
        "released_at": ts(T0),
        "created_at": ts(T0),
        "updated_at": ts(T0),
    }
    return row | over


def purchase(
    source_id: int, package_id: int | None, purchased_at: datetime, **over: Any
) -> dict[str, Any]:
    n = next(_ids)
    row = {
        "source_id": source_id,
        "package_id": package_id,
        "allowed_for": "package" if package_id is not None else "source",
        "nickname": f"buyer{n}",
        "status": "Completed",
        "total": "1.99",
        "commission": "0.30",
        "currency": "USD",
        "purchased_at": ts(purchased_at),
        "txn_id": f"TXN{n:08d}",
        "profile_url": f"https://forum.example/u/buyer{n}",
        "payment_platform": "paypal",
    }
    return row | over
