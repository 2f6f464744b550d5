"""package/check.json: does a buyer, by nickname, account or device, own a package?"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import insert

from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.engine import write_transaction
from tests import factories as f
from tests.conftest import Api, Clock

CHECK = "/1.0/package/check.json"


def answer(api: Api, app: str = "alpha-a", **params: Any) -> dict[str, Any]:
    response = api.get(CHECK, api.keys[app], **params)
    assert response.status_code == 200, response.text
    return response.json()["response"]  # type: ignore[no-any-return]  # checked by the schema


def refused(api: Api, status: int, code: int, app: str = "alpha-a", **params: Any) -> str:
    response = api.get(CHECK, api.keys[app], **params)
    assert (response.status_code, response.json()["code"]) == (status, code), response.text
    message: str = response.json()["response"]
    return message


def bought(source_id: int, package_id: int | None, when: datetime, **over: Any) -> dict[str, Any]:
    """A purchase row with 0005's buyer columns, given or null (rows inserted together agree)."""
    return {"account": None, "udid": None, "device_model": None} | f.purchase(
        source_id, package_id, when, **over
    )


@pytest.fixture
def buyers(admin: CatalogueAdmin, clock: Clock) -> None:
    """ada bought com.alpha.paid twice (a refunded one first); bob the whole source; eve refunded."""
    now = clock.now
    admin.load(
        purchases=[
            bought(1, 1, now - timedelta(days=9), txn_id="ADA-R", nickname="ada",
                       status="Refunded", account="acc-ada"),
            bought(1, 1, now - timedelta(days=8), txn_id="ADA-1", nickname="ada",
                       account="acc-ada", udid="UDID-ADA-1", device_model="iPhone12,1"),
            bought(1, 1, now - timedelta(days=4), txn_id="ADA-2", nickname="ada",
                       account="acc-ada"),
            bought(1, None, now - timedelta(days=6), txn_id="BOB-S", nickname="bob",
                       account="acc-bob"),
            bought(1, 4, now - timedelta(days=7), txn_id="BOB-O", nickname="bob"),
            bought(1, 1, now - timedelta(days=2), txn_id="EVE-C", nickname="eve",
                       status="Chargeback", udid="UDID-EVE"),
            bought(2, 5, now - timedelta(days=2), txn_id="MAL-B", nickname="mallory",
                       account="acc-mal", udid="UDID-MAL"),
        ]
    )  # fmt: skip
    with write_transaction(admin.engine) as db:
        db.execute(
            insert(t.buyer_devices),
            [
                {"source_id": 1, "nickname": "ada", "account": "acc-ada",
                 "udid": "UDID-ADA-1", "device_model": "iPhone12,1"},
                {"source_id": 1, "nickname": "ada", "account": "acc-ada",
                 "udid": "UDID-ADA-2", "device_model": "iPad8,1"},
                {"source_id": 1, "nickname": "eve", "account": None,
                 "udid": "UDID-EVE", "device_model": None},
                {"source_id": 2, "nickname": "mallory", "account": "acc-mal",
                 "udid": "UDID-MAL", "device_model": None},
                {"source_id": 2, "nickname": "ada", "account": None,
                 "udid": "UDID-SHARED", "device_model": None},
            ],
        )  # fmt: skip


def test_owned_by_nickname_earliest_completed_purchase(api: Api, buyers: None) -> None:
    assert answer(api, package="com.alpha.paid", nickname="ada") == {
        "package": "com.alpha.paid",
        "owned": True,
        "since": "2024-03-23T12:00:00+00:00",
        "purchase": {"txn_id": "ADA-1", "allowed_for": "package"},
    }


def test_owned_by_account(api: Api, buyers: None) -> None:
    found = answer(api, package="com.alpha.paid", account="acc-ada")
    assert found["purchase"] == {"txn_id": "ADA-1", "allowed_for": "package"}


def test_a_whole_source_purchase_owns_every_package(api: Api, buyers: None) -> None:
    found = answer(api, package="com.alpha.paid", nickname="bob")
    assert found["purchase"] == {"txn_id": "BOB-S", "allowed_for": "source"}
    # On the other package, his own purchase there is earlier.
    other = answer(api, package="com.alpha.other", nickname="bob")
    assert other["purchase"] == {"txn_id": "BOB-O", "allowed_for": "package"}


def test_by_device_any_registered_device_and_model(api: Api, buyers: None) -> None:
    for udid in ("UDID-ADA-1", "UDID-ADA-2"):
        found = answer(api, package="com.alpha.paid", udid=udid)
        assert found["purchase"] == {"txn_id": "ADA-1", "allowed_for": "package"}, udid
    assert answer(api, package="com.alpha.paid", udid="UDID-ADA-2", model="iPad8,1")["owned"]
    assert not answer(api, package="com.alpha.paid", udid="UDID-ADA-2", model="iPhone12,1")["owned"]


def test_refunds_and_chargebacks_never_count(
    admin: CatalogueAdmin, api: Api, buyers: None, clock: Clock
) -> None:
    assert answer(api, package="com.alpha.paid", nickname="eve") == {
        "package": "com.alpha.paid",
        "owned": False,
        "since": None,
        "purchase": None,
    }
    assert not answer(api, package="com.alpha.paid", udid="UDID-EVE")["owned"]
    # ada's purchases refunded: she owns it no more, and the answer changes at once.
    with write_transaction(admin.engine) as db:
        db.execute(
            t.purchases.update().where(t.purchases.c.nickname == "ada").values(status="Refunded")
        )
    assert not answer(api, package="com.alpha.paid", nickname="ada")["owned"]


def test_a_source_never_checks_another_sources_buyers(api: Api, buyers: None) -> None:
    for who in ({"nickname": "mallory"}, {"account": "acc-mal"}, {"udid": "UDID-MAL"}):
        assert not answer(api, package="com.alpha.paid", **who)["owned"], who
    # ada registered UDID-SHARED with Beta only: not a device of Alpha's buyers.
    assert not answer(api, package="com.alpha.paid", udid="UDID-SHARED")["owned"]
    # Nor another source's package: code 12, whoever the buyer.
    message = refused(api, 403, 12, package="com.beta.paid", nickname="mallory")
    assert message.startswith("package: 'com.beta.paid' belongs to another source")


def test_unknown_package_is_code_8(api: Api, buyers: None) -> None:
    refused(api, 404, 8, package="com.nobody", nickname="ada")
    # Offline packages of another source are unknown to it, as in details and buyers.
    refused(api, 404, 8, app="beta-a", package="com.alpha.offline", nickname="ada")


def test_shape_b_answers_the_same(api: Api, buyers: None) -> None:
    a = answer(api, package="com.alpha.paid", nickname="ada")
    assert answer(api, "alpha-b", package="com.alpha.paid", nickname="ada") == a


def test_the_date_is_in_the_application_zone(admin: CatalogueAdmin, api: Api, clock: Clock) -> None:
    admin.load(purchases=[bought(2, 5, clock.now - timedelta(days=1), nickname="zoe")])
    found = answer(api, "beta-paris", package="com.beta.paid", nickname="zoe")
    assert found["since"] == "2024-03-30T13:00:00+01:00"


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({}, "nickname"),
        ({"nickname": "ada", "account": "acc-ada"}, "account"),
        ({"account": "acc-ada", "udid": "X"}, "udid"),
        ({"nickname": "ada", "model": "iPad8,1"}, "model"),
        ({"model": "iPad8,1"}, "nickname"),
        ({"nickname": ""}, "nickname"),
        ({"udid": "X", "model": ""}, "model"),
        ({"nickname": "ada", "package": ""}, "package"),
    ],
)
def test_invalid_combinations_are_code_2_naming_the_parameter(
    api: Api, params: dict[str, str], name: str
) -> None:
    message = refused(api, 400, 2, **({"package": "com.alpha.paid"} | params))
    assert message.startswith(f"{name}: "), message


def test_a_device_on_the_packages_whitelist_owns_it_without_a_purchase(
    admin: CatalogueAdmin, api: Api, buyers: None, clock: Clock
) -> None:
    from pkgcat.storage.writes import whitelist

    before = answer(api, package="com.alpha.paid", udid="UDID-TESTER")
    assert not before["owned"]
    when = clock.now - timedelta(days=1)
    whitelist.add(admin.engine, 1, [("UDID-TESTER", "beta"), ("UDID-ADA-1", "")], f.ts(when))
    # The rendered answer kept for the catalogue's generation is not served again.
    assert answer(api, package="com.alpha.paid", udid="UDID-TESTER") == {
        "package": "com.alpha.paid",
        "owned": True,
        "since": "2024-03-30T12:00:00+00:00",
        "purchase": None,
        "udid": "UDID-TESTER",
        "check": "success",
    }
    # Bought and whitelisted: the purchase is named, and since is the earlier date.
    both = answer(api, package="com.alpha.paid", udid="UDID-ADA-1")
    assert both["purchase"] == {"txn_id": "ADA-1", "allowed_for": "package"}
    assert both["since"] == "2024-03-23T12:00:00+00:00"
    # By buyer, the whitelist says nothing: it names devices.
    assert not answer(api, package="com.alpha.paid", nickname="nobody")["owned"]
