"""source/packages.json: the caller's own packages, filtered, walked with cursors."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pkgcat.storage.admin import CatalogueAdmin
from tests import factories as f
from tests.conftest import Api

PACKAGES = "/1.0/source/packages.json"
ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}")
B_DATE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")


def body(api: Api, app: str, **params: Any) -> dict[str, Any]:
    response = api.get(PACKAGES, api.keys[app], **params)
    assert response.status_code == 200, response.text
    return response.json()["response"]  # type: ignore[no-any-return]  # checked by the schema


def refused(api: Api, name: str, app: str = "alpha-a", **params: Any) -> str:
    response = api.get(PACKAGES, api.keys[app], **params)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == 2
    message: str = response.json()["response"]
    assert message.startswith(f"{name}: "), message
    return message


def identifiers(page: dict[str, Any]) -> list[str]:
    return [p["package"] for p in page["packages"]]


def test_own_packages_online_and_offline_by_identifier(api: Api) -> None:
    page = body(api, "alpha-a")
    assert identifiers(page) == [
        "com.alpha.free",
        "com.alpha.offline",
        "com.alpha.other",
        "com.alpha.paid",
    ]
    assert (page["limit"], page["has_more"], page["cursor"]) == (25, False, None)


def test_fields_and_json_types_in_shape_a(api: Api) -> None:
    paid = body(api, "alpha-a")["packages"][3]
    assert list(paid) == [
        "package", "name", "version", "online", "paid", "price", "currency",
        "downloads", "votes", "rating", "updated",
    ]  # fmt: skip
    assert paid == {
        "package": "com.alpha.paid",
        "name": "Paid",
        "version": "1.2.3",
        "online": True,
        "paid": True,
        "price": "1.99",
        "currency": "USD",
        "downloads": 1234,
        "votes": 10,
        "rating": 4.2,
        "updated": "2024-03-10T12:00:00+00:00",
    }
    free, offline = body(api, "alpha-a")["packages"][:2]
    assert (free["paid"], free["price"]) == (False, "0.00")
    assert offline["online"] is False


def test_shape_b_differs_only_in_the_date(api: Api) -> None:
    a, b = body(api, "alpha-a")["packages"], body(api, "alpha-b")["packages"]
    assert B_DATE.fullmatch(b[0]["updated"])
    assert ISO.fullmatch(a[0]["updated"])
    assert b[0]["updated"] == "2024-03-10 12:00:00"
    assert [{**p, "updated": None} for p in a] == [{**p, "updated": None} for p in b]


def test_dates_follow_the_application_zone(api: Api) -> None:
    (package,) = body(api, "beta-paris")["packages"]
    assert package["updated"] == "2024-03-10T13:00:00+01:00"


def test_unknown_price_and_no_votes_are_null(admin: CatalogueAdmin, api: Api) -> None:
    admin.load(
        packages=[
            f.package(9, 2, "com.beta.pending", price=None, commercial=True, total_votes=0),
            f.package(10, 2, "com.beta.gratis", price=None, commercial=False),
        ]
    )
    page = {p["package"]: p for p in body(api, "beta-a")["packages"]}
    pending, gratis = page["com.beta.pending"], page["com.beta.gratis"]
    assert (pending["price"], pending["paid"], pending["rating"]) == (None, True, None)
    assert (gratis["price"], gratis["paid"]) == ("0.00", False)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"paid": "1"}, ["com.alpha.offline", "com.alpha.other", "com.alpha.paid"]),
        ({"paid": "0"}, ["com.alpha.free"]),
        ({"online": "0"}, ["com.alpha.offline"]),
        ({"online": "1", "paid": "1"}, ["com.alpha.other", "com.alpha.paid"]),
        ({"online": " 1 ", "paid": "+0"}, ["com.alpha.free"]),
    ],
)
def test_filters(api: Api, params: dict[str, str], expected: list[str]) -> None:
    assert identifiers(body(api, "alpha-a", **params)) == expected


def test_a_source_never_sees_another_sources_packages(api: Api) -> None:
    for params in ({}, {"paid": "1"}, {"paid": "0"}, {"online": "0"}, {"limit": "100"}):
        found = identifiers(body(api, "beta-a", **params))
        assert found == (
            ["com.beta.paid"] if params.get("online", params.get("paid")) != "0" else []
        )


@pytest.fixture
def many(admin: CatalogueAdmin) -> None:
    admin.load(packages=[f.package(100 + n, 1, f"com.alpha.many{n:03d}") for n in range(120)])


def test_a_cursor_walk_sees_every_package_once(api: Api, many: None) -> None:
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = body(api, "alpha-a", limit=50, cursor=cursor)
        pages += 1
        seen += identifiers(page)
        assert page["has_more"] is (page["cursor"] is not None)
        cursor = page["cursor"]
        if cursor is None:
            break
    assert pages == 3
    assert seen == sorted(seen)
    assert len(seen) == len(set(seen)) == 124


def test_a_walk_is_stable_while_packages_arrive(
    admin: CatalogueAdmin, api: Api, many: None
) -> None:
    first = body(api, "alpha-a", limit=10)
    admin.load(packages=[f.package(400, 1, "com.alpha.aaa"), f.package(401, 1, "com.alpha.zzz")])
    second = body(api, "alpha-a", limit=10, cursor=first["cursor"])
    assert identifiers(second)[0] > identifiers(first)[-1]
    assert "com.alpha.aaa" not in identifiers(second)


def test_limit_clamped_and_bounded(api: Api, many: None) -> None:
    page = body(api, "alpha-a", limit=500)
    assert (page["limit"], len(page["packages"]), page["has_more"]) == (100, 100, True)
    assert len(body(api, "alpha-a", limit=1)["packages"]) == 1
    refused(api, "limit", limit=0)
    refused(api, "limit", limit="ten")


@pytest.mark.parametrize(
    ("name", "value"), [("paid", "2"), ("paid", "yes"), ("online", "-1"), ("online", "")]
)
def test_invalid_filters_are_code_2(api: Api, name: str, value: str) -> None:
    refused(api, name, **{name: value})


def test_cursors_of_other_lists_are_refused(api: Api, many: None) -> None:
    cursor = body(api, "alpha-a", limit=10)["cursor"]
    assert body(api, "alpha-b", limit=10, cursor=cursor)["packages"]  # same source: fine
    refused(api, "cursor", app="beta-a", cursor=cursor)  # another source's
    refused(api, "cursor", paid="1", cursor=cursor)  # other filters
    refused(api, "cursor", cursor=cursor[:-2] + ("AA" if cursor[-2:] != "AA" else "BB"))
    refused(api, "cursor", cursor="x" * 600)
    refused(api, "cursor", cursor="garbage!")
    other = body(api, "alpha-a", limit=10, paid="1")["cursor"]
    refused(api, "cursor", cursor=other)
