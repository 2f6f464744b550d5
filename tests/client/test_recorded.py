"""Recorded bodies of both shapes, and the quirks the spec observed, read into typed records."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from pkgcat.client import Client, ProtocolError, Relation
from tests.client.conftest import BASE, KEY, Double, answer, recorded

PARIS = ZoneInfo("Europe/Paris")


def client_for(body: dict[str, Any], **options: Any) -> Client:
    return Client(BASE, KEY, transport=Double(answer(0, body["response"])).transport, **options)


def test_usage_in_shape_a() -> None:
    days = client_for(recorded("usage_a")).usage(days=3)
    assert [(d.date, d.usage) for d in days] == [
        (datetime(2026, 11, 19, tzinfo=UTC), 143),
        (datetime(2026, 11, 20, tzinfo=UTC), 0),
        (datetime(2026, 11, 21, tzinfo=UTC), 408),
        (datetime(2026, 11, 22, tzinfo=UTC), 10),
    ]
    assert days[-1].day == date(2026, 11, 22)


def test_usage_in_shape_b_reads_dd_mm_yyyy_and_the_string_count() -> None:
    body = recorded("usage_b")
    assert body["response"][-1]["usage"] == "1"  # the quirk is in the recording
    days = client_for(body).usage(days=3)
    assert [d.usage for d in days] == [551, 611, 750, 1]
    assert all(type(d.usage) is int for d in days)
    assert [d.day for d in days] == [date(2026, 11, d) for d in (19, 20, 21, 22)]
    assert days[0].date == datetime(2026, 11, 19, tzinfo=UTC)
    assert days[0].date.utcoffset() == timedelta(0)


def test_shape_b_dates_are_read_in_the_zone_the_client_is_given() -> None:
    days = client_for(recorded("usage_b"), tz="Europe/Paris").usage(days=3)
    assert days[0].date == datetime(2026, 11, 19, tzinfo=PARIS)
    assert days[0].date.utcoffset() == timedelta(hours=1)
    package = client_for(recorded("details_b"), tz=PARIS).package("com.havoclabs.velvet")
    assert package.date == datetime(2026, 4, 10, 2, 11, 55, tzinfo=UTC)  # 04:11:55 in Paris


def test_package_in_shape_a_has_every_field_typed() -> None:
    package = client_for(recorded("details_a")).package("com.havoclabs.velvet")
    assert package.package == "com.havoclabs.velvet"
    assert (package.name, package.version) == ("Velvet", "3.5.1")
    assert package.date == datetime(2026, 4, 10, 4, 11, 55, tzinfo=UTC)
    assert package.architecture == "iphoneos-arm64"
    assert package.sha256 == "48ddedc752726b6807de57fc1fbbacd2b3e090a90f4e177c9313717980cbf67e"
    assert package.source.origin == "Havoc Labs"
    assert package.replaces is not None
    assert package.replaces.names == ("com.havoclabs.velvet-legacy",)
    assert (package.size, package.total_download) == (284486, 102077)
    assert (package.total_votes, package.total_value_votes) == (1757, 5886)
    assert package.price == Decimal("2.49")
    assert package.online is True
    assert package.is_free is False
    assert package.compatible == ("iOS 14", "iOS 15", "iOS 16")
    assert len(package.screenshots) == 3
    assert package.icon.startswith("https://")
    assert package.depends.raw == (
        "firmware (>= 14.0), mobilesubstrate (>= 0.9.7000), preferenceloader"
    )
    assert package.depends.groups == (
        (Relation("firmware", ">=", "14.0"),),
        (Relation("mobilesubstrate", ">=", "0.9.7000"),),
        (Relation("preferenceloader"),),
    )
    assert package.pre_depends.groups == ((Relation("dpkg", ">=", "1.19.7"),),)


def test_package_in_shape_b_lacks_the_a_only_fields_and_keeps_http_addresses() -> None:
    a = client_for(recorded("details_a")).package("com.havoclabs.velvet")
    b = client_for(recorded("details_b")).package("com.havoclabs.velvet")
    assert (b.architecture, b.replaces, b.sha256, b.source.origin) == (None, None, None, None)
    assert b.icon == a.icon.replace("https://", "http://", 1)
    assert b.source.url == "http://repo.havoclabs.example/"
    # Everything both shapes carry reads the same, the date included (UTC server, UTC client).
    for name in ("package", "name", "date", "version", "size", "price", "total_votes"):
        assert getattr(a, name) == getattr(b, name), name
    assert (a.depends, a.conflicts, a.compatible) == (b.depends, b.conflicts, b.compatible)


def test_an_offset_in_the_body_wins_over_the_clients_zone() -> None:
    package = client_for(recorded("details_a_paris")).package("com.havoclabs.velvet")
    assert package.date.utcoffset() == timedelta(hours=2)
    assert package.date == datetime(2026, 4, 10, 4, 11, 55, tzinfo=UTC)


@pytest.mark.parametrize("shape", ["a", "b"])
def test_buyers_page_numbers_and_amounts(shape: str) -> None:
    page = client_for(recorded(f"buyers_{shape}")).buyers("com.havoclabs.velvet", 2, 2)
    assert (page.start, page.limit, page.total, page.page) == (2, 2, 300, 2)
    first = page.buyers[0]
    assert first.total == Decimal("7.47")
    assert first.commission == Decimal("1.12")
    assert first.date == datetime(2026, 11, 13, 15, 30, 9, tzinfo=UTC)
    assert first.allowed_for == "source"
    scheme = "https://" if shape == "a" else "http://"
    assert first.profile_url == f"{scheme}forum.example/u/kaijb300"


def test_empty_relation_fields_are_empty_and_keep_the_raw_string() -> None:
    body = recorded("details_a")
    body["response"] |= {"pre-depends": "", "conflicts": "", "replaces": ""}
    package = client_for(body).package("x")
    assert package.pre_depends.groups == ()
    assert package.pre_depends.raw == ""
    assert len(package.conflicts) == 0
    assert package.replaces is not None
    assert list(package.replaces) == []


def test_an_older_server_numbers_as_strings_everywhere_and_unknown_fields() -> None:
    usage = recorded("usage_b")
    for entry in usage["response"]:
        entry["usage"] = str(entry["usage"])
        entry["weekday"] = "?"
    assert [d.usage for d in client_for(usage).usage(3)] == [551, 611, 750, 1]
    buyers = recorded("buyers_b")
    page_body = buyers["response"]
    page_body |= {"start": "2", "limit": "2", "page": "2", "total": 300, "next": None}
    page_body["buyers"][0] |= {"total": 7.47, "date": "2026-11-13 15:30:09", "note": {"x": 1}}
    page = client_for(buyers, tz=PARIS).buyers("p", 2, 2)
    assert (page.start, page.limit, page.total, page.page) == (2, 2, 300, 2)
    assert page.buyers[0].total == Decimal("7.47")
    assert page.buyers[0].date == datetime(2026, 11, 13, 15, 30, 9, tzinfo=PARIS)
    details = recorded("details_b")
    details["response"] |= {"size": 284486, "online": 1, "price": 2, "rating": 4.5}
    details["response"]["source"]["id"] = 7
    package = client_for(details).package("com.havoclabs.velvet")
    assert (package.size, package.online, package.price) == (284486, True, Decimal(2))


def test_a_price_not_known_yet_and_an_empty_digest_are_none() -> None:
    body = recorded("details_a")
    body["response"] |= {"price": "", "sha256": ""}
    package = client_for(body).package("com.havoclabs.velvet")
    assert package.price is None
    assert package.is_free is False
    assert package.sha256 is None
    body["response"]["price"] = "0.00"
    assert client_for(body).package("x").is_free is True


def test_usage_dates_in_either_format_in_one_response() -> None:
    body = recorded("usage_a")
    body["response"][1]["date"] = "20-11-2026 00:00:00"
    body["response"][2]["date"] = "2026-11-21T00:00:00Z"
    days = client_for(body).usage(3)
    assert [d.date for d in days] == [datetime(2026, 11, d, tzinfo=UTC) for d in (19, 20, 21, 22)]


@pytest.mark.parametrize(
    ("name", "change", "field"),
    [
        ("usage_a", lambda r: r[0].update(usage="many"), "response[0].usage"),
        ("usage_a", lambda r: r[1].update(date="yesterday"), "response[1].date"),
        ("usage_a", lambda r: r[2].pop("date"), "response[2].date: missing"),
        ("details_a", lambda r: r.update(price="free"), "response.price"),
        ("details_a", lambda r: r.update(size="12 kB"), "response.size"),
        ("details_a", lambda r: r.update(online="maybe"), "response.online"),
        ("details_a", lambda r: r["source"].pop("url"), "response.source.url: missing"),
        ("details_b", lambda r: r.update(screenshots="a.png"), "response.screenshots"),
        ("buyers_a", lambda r: r["buyers"][1].update(commission=None), "buyers[1].commission"),
        ("buyers_a", lambda r: r.update(buyers={}), "response.buyers"),
    ],
)
def test_an_unreadable_field_is_a_protocol_error_naming_it(
    name: str, change: Any, field: str
) -> None:
    body = recorded(name)
    change(body["response"])
    client = client_for(body)
    call: Callable[[], object] = {
        "usage": lambda: client.usage(3),
        "details": lambda: client.package("x"),
        "buyers": lambda: client.buyers("x"),
    }[name.split("_")[0]]
    with pytest.raises(
        ProtocolError, match=field.replace("[", r"\[").replace("]", r"\]")
    ) as caught:
        call()
    assert caught.value.status == 200
    assert caught.value.code is None
