"""buyers.json: decision 5 of docs/api.md."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from pkgcat.storage.admin import CatalogueAdmin
from tests import factories as f
from tests.conftest import Api, Clock

BUYERS = "/1.0/package/buyers.json"
ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}")


def page(api: Api, app: str, package: str, **params: Any) -> dict[str, Any]:
    response = api.get(BUYERS, api.keys[app], package=package, **params)
    assert response.status_code == 200, response.text
    return response.json()["response"]  # type: ignore[no-any-return]  # checked by the schema


def test_newest_first_and_source_scope_counts(api: Api) -> None:
    body = page(api, "alpha-a", "com.alpha.paid")
    assert (body["start"], body["limit"], body["page"], body["total"]) == (0, 25, 1, "3")
    assert [b["txn_id"] for b in body["buyers"]] == ["P-NEW", "S-MID", "P-OLD"]
    assert [b["allowed_for"] for b in body["buyers"]] == ["package", "source", "package"]


def test_a_source_purchase_is_a_buyer_of_every_paid_package(api: Api) -> None:
    body = page(api, "alpha-a", "com.alpha.other")
    assert [b["txn_id"] for b in body["buyers"]] == ["S-MID", "O-OTHER"]


def test_buyer_fields_and_formats(api: Api) -> None:
    buyer = page(api, "alpha-a", "com.alpha.paid")["buyers"][1]
    assert list(buyer) == [
        "nickname", "status", "total", "commission", "currency", "date",
        "txn_id", "profile_url", "allowed_for", "payment_platform", "fee", "net",
    ]  # fmt: skip
    assert buyer["total"] == "9.00"
    assert re.fullmatch(r"\d+\.\d{2}", buyer["commission"])
    assert buyer["status"] == "Completed"
    assert buyer["payment_platform"] == "paypal"
    assert ISO.fullmatch(buyer["date"])
    assert buyer["date"] == "2024-03-29T12:00:00+00:00"


def test_buyer_dates_are_iso_with_offset_in_shape_b_too(api: Api) -> None:
    buyer = page(api, "alpha-b", "com.alpha.paid")["buyers"][0]
    assert ISO.fullmatch(buyer["date"])
    assert buyer["profile_url"].startswith("http://")


def test_ties_on_date_are_ordered_by_txn_id(admin: CatalogueAdmin, api: Api, clock: Clock) -> None:
    when = clock.now - timedelta(hours=1)
    admin.load(
        purchases=[f.purchase(1, 4, when, txn_id=t) for t in ("T-C", "T-A", "T-B")],
    )
    body = page(api, "alpha-a", "com.alpha.other")
    assert [b["txn_id"] for b in body["buyers"]][:3] == ["T-A", "T-B", "T-C"]


@pytest.fixture
def many(admin: CatalogueAdmin, clock: Clock) -> None:
    admin.load(
        purchases=[
            f.purchase(1, 4, clock.now - timedelta(minutes=n), txn_id=f"M-{n:04d}")
            for n in range(1, 231)
        ]
    )


def test_pages_walk_every_buyer_once(api: Api, many: None) -> None:
    seen: list[str] = []
    for number in range(1, 5):
        body = page(api, "alpha-a", "com.alpha.other", limit=70, page=number)
        assert body["start"] == (number - 1) * 70
        assert body["total"] == "232"
        seen += [b["txn_id"] for b in body["buyers"]]
    assert len(seen) == len(set(seen)) == 232


def test_limit_above_100_is_clamped_and_reported(api: Api, many: None) -> None:
    body = page(api, "alpha-a", "com.alpha.other", limit=500)
    assert body["limit"] == 100
    assert len(body["buyers"]) == 100


def test_page_past_the_end_is_empty_with_the_true_total(api: Api, many: None) -> None:
    body = page(api, "alpha-a", "com.alpha.other", limit=100, page=50)
    assert body["buyers"] == []
    assert body["total"] == "232"
    assert body["start"] == 4900


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "-3"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"page": "0"}, "page"),
        ({"page": "x"}, "page"),
        ({"package": ""}, "package"),
    ],
)
def test_invalid_arguments_are_code_2_naming_the_parameter(
    api: Api, params: dict[str, str], name: str
) -> None:
    query = {"package": "com.alpha.paid"} | params
    response = api.get(BUYERS, api.keys["alpha-a"], **query)
    assert response.status_code == 400
    assert response.json()["code"] == 2
    assert response.json()["response"].startswith(f"{name}: ")


def test_free_package_has_no_buyers_code_2(api: Api) -> None:
    response = api.get(BUYERS, api.keys["alpha-a"], package="com.alpha.free")
    assert response.status_code == 400
    assert response.json() == {
        "code": 2,
        "response": "package: 'com.alpha.free' is free: it has no buyers",
    }


def test_another_sources_package_is_code_12(api: Api) -> None:
    response = api.get(BUYERS, api.keys["beta-a"], package="com.alpha.paid")
    assert response.status_code == 403
    assert response.json()["code"] == 12


def test_another_sources_offline_package_is_not_found(api: Api) -> None:
    response = api.get(BUYERS, api.keys["beta-a"], package="com.alpha.offline")
    assert response.status_code == 404
    assert response.json()["code"] == 8


def test_own_offline_paid_package_still_lists_its_buyers(api: Api) -> None:
    body = page(api, "alpha-a", "com.alpha.offline")
    assert [b["txn_id"] for b in body["buyers"]] == ["S-MID"]


def test_unknown_package_is_code_8(api: Api) -> None:
    response = api.get(BUYERS, api.keys["alpha-a"], package="com.none")
    assert response.json()["code"] == 8


def test_buyer_dates_are_in_the_application_zone(admin: CatalogueAdmin, api: Api) -> None:
    issued = admin.load(applications=[f.application(5, 1, "alpha-paris", timezone="Europe/Paris")])
    body = api.get(BUYERS, issued[5].secret_key, package="com.alpha.paid").json()["response"]
    # P-NEW was bought at 12:00 UTC on 30 March 2024: 13:00 in Paris, still on winter time.
    assert body["buyers"][0]["txn_id"] == "P-NEW"
    assert body["buyers"][0]["date"] == "2024-03-30T13:00:00+01:00"


@pytest.mark.parametrize("limit", [1, 13, 100])
def test_deep_pages_match_the_full_order_even_across_equal_dates(
    admin: CatalogueAdmin, api: Api, clock: Clock, limit: int
) -> None:
    # 450 buyers in both scopes, many sharing a second, so checkpoints fall inside ties.
    rows = [
        f.purchase(
            1,
            None if n % 5 == 0 else 4,
            clock.now - timedelta(seconds=n // 7),
            txn_id=f"D-{(n * 7919) % 1000:03d}-{n}",
        )
        for n in range(450)
    ]
    admin.load(purchases=rows)
    body = page(api, "alpha-a", "com.alpha.other", limit=100)
    expected_total = int(body["total"])
    walked: list[str] = []
    for number in range(1, expected_total // limit + 2):
        walked += [
            b["txn_id"]
            for b in page(api, "alpha-a", "com.alpha.other", limit=limit, page=number)["buyers"]
        ]
    everyone = [
        *rows,
        {"purchased_at": f.ts(clock.now - timedelta(days=2)), "txn_id": "S-MID"},
        {"purchased_at": f.ts(clock.now - timedelta(days=5)), "txn_id": "O-OTHER"},
    ]
    ordered = [
        r["txn_id"] for r in sorted(everyone, key=lambda r: (-r["purchased_at"], r["txn_id"]))
    ]
    assert expected_total == len(ordered) == 452
    assert walked == ordered


def test_new_purchases_show_on_the_next_request(
    admin: CatalogueAdmin, api: Api, clock: Clock, many: None
) -> None:
    assert page(api, "alpha-a", "com.alpha.other", limit=100, page=3)["total"] == "232"
    admin.load(purchases=[f.purchase(1, 4, clock.now, txn_id="A-FRESH")])
    first = page(api, "alpha-a", "com.alpha.other", limit=100, page=1)
    assert first["total"] == "233"
    assert first["buyers"][0]["txn_id"] == "A-FRESH"
    last = page(api, "alpha-a", "com.alpha.other", limit=100, page=3)
    assert len(last["buyers"]) == 33


# Cursor mode (docs/api.md): keyset pages, stable while purchases arrive.


def walk_buyers(api: Api, app: str, package: str, between: Any = None, **params: Any) -> list[str]:
    seen: list[str] = []
    cursor = ""
    while True:
        body = page(api, app, package, cursor=cursor, **params)
        assert list(body) == ["limit", "total", "buyers", "has_more", "cursor"]
        assert body["has_more"] is (body["cursor"] is not None)
        seen += [b["txn_id"] for b in body["buyers"]]
        if body["cursor"] is None:
            return seen
        cursor = body["cursor"]
        if between is not None:
            between()


def test_cursor_mode_answers_the_same_buyers_as_pages(api: Api, many: None) -> None:
    first = page(api, "alpha-a", "com.alpha.other", limit=70, cursor="")
    assert (first["limit"], first["total"], first["has_more"]) == (70, "232", True)
    paged = page(api, "alpha-a", "com.alpha.other", limit=70)
    assert first["buyers"] == paged["buyers"]
    assert walk_buyers(api, "alpha-b", "com.alpha.other", limit=100) == [
        b for n in range(1, 4) for b in
        [x["txn_id"] for x in page(api, "alpha-a", "com.alpha.other", limit=100, page=n)["buyers"]]
    ]  # fmt: skip


def test_a_cursor_walk_sees_each_buyer_once_while_purchases_arrive(
    admin: CatalogueAdmin, api: Api, clock: Clock, many: None
) -> None:
    before = set(walk_buyers(api, "alpha-a", "com.alpha.other", limit=100))
    arrivals = iter(range(100))

    def arrive() -> None:
        n = next(arrivals)
        admin.load(
            purchases=[
                f.purchase(1, 4, clock.now - timedelta(seconds=n), txn_id=f"NEW-{n}"),
                f.purchase(1, None, clock.now - timedelta(seconds=30 + n), txn_id=f"NEWS-{n}"),
            ]
        )

    seen = walk_buyers(api, "alpha-a", "com.alpha.other", between=arrive, limit=40)
    assert len(seen) == len(set(seen))
    assert before == set(seen)  # every new purchase is newer than the walk's first page


def test_the_last_page_has_no_cursor(api: Api) -> None:
    body = page(api, "alpha-a", "com.alpha.paid", cursor="")
    assert (body["total"], body["has_more"], body["cursor"]) == ("3", False, None)
    assert [b["txn_id"] for b in body["buyers"]] == ["P-NEW", "S-MID", "P-OLD"]


def test_cursor_mode_refusals(api: Api, many: None) -> None:
    cursor = page(api, "alpha-a", "com.alpha.other", limit=10, cursor="")["cursor"]
    for app, package, params in (
        ("alpha-a", "com.alpha.other", {"page": "2"}),  # with page
        ("alpha-a", "com.alpha.paid", {}),  # another package's list
        ("beta-a", "com.beta.paid", {}),  # another source
        ("alpha-a", "com.alpha.other", {"cursor": cursor[::-1]}),
        ("alpha-a", "com.alpha.other", {"cursor": cursor + "A"}),
    ):
        response = api.get(
            BUYERS, api.keys[app], package=package, **({"cursor": cursor, "limit": 10} | params)
        )
        assert response.status_code == 400, (app, params)
        assert response.json()["code"] == 2
        assert response.json()["response"].startswith("cursor: ")
    # Another source's package stays code 12 in cursor mode, as in page mode.
    response = api.get(BUYERS, api.keys["beta-a"], package="com.alpha.paid", cursor="")
    assert (response.status_code, response.json()["code"]) == (403, 12)
