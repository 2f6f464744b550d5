"""details.json: decisions 1 (shapes) and 4 (details) of docs/api.md, every field's format."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pkgcat.storage.admin import CatalogueAdmin
from tests import factories as f
from tests.conftest import Api, AppFactory

DETAILS = "/1.0/package/details.json"

A_FIELDS = [
    "package", "name", "date", "version", "architecture", "author", "section",
    "description", "pre-depends", "depends", "conflicts", "replaces", "size", "md5sum",
    "sha256", "long_description", "compatible", "total_download", "total_votes",
    "total_value_votes", "online", "price", "currency", "source", "icon", "screenshots", "url",
]  # fmt: skip
A_ONLY = {"architecture", "replaces", "sha256"}
DIGITS = re.compile(r"\d+")


def details(api: Api, app: str, package: str) -> dict[str, Any]:
    response = api.get(DETAILS, api.keys[app], package=package)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["code"] == 0
    return body["response"]  # type: ignore[no-any-return]  # JSON object checked above


def test_shape_a_has_every_field_in_spec_order_with_its_format(api: Api) -> None:
    body = details(api, "alpha-a", "com.alpha.paid")
    assert list(body) == A_FIELDS
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00", body["date"])
    assert body["date"] == "2024-03-10T12:00:00+00:00"
    assert re.fullmatch(r"[0-9a-f]{32}", body["md5sum"])
    assert re.fullmatch(r"[0-9a-f]{64}", body["sha256"])
    for name in ("size", "total_download", "total_votes", "total_value_votes"):
        assert DIGITS.fullmatch(body[name]), name
    assert (body["total_download"], body["total_votes"], body["total_value_votes"]) == (
        "1234",
        "10",
        "42",
    )
    assert body["online"] == "1"
    assert body["price"] == "1.99"
    assert re.fullmatch(r"[A-Z]{3}", body["currency"])
    assert body["compatible"] == ["iOS 14", "iOS 15"]
    assert body["source"] == {
        "name": "Alpha",
        "origin": "Alpha Origin",
        "url": "https://alpha.example/",
    }
    for address in [body["icon"], body["url"], *body["screenshots"]]:
        assert address.startswith("https://")
    assert len(body["screenshots"]) == 2
    assert body["pre-depends"] == ""
    assert body["depends"] == "firmware (>= 14.0), mobilesubstrate"


def test_shape_b_drops_a_only_fields_and_speaks_http(api: Api) -> None:
    body = details(api, "alpha-b", "com.alpha.paid")
    assert list(body) == [name for name in A_FIELDS if name not in A_ONLY]
    assert body["date"] == "2024-03-10 12:00:00"
    assert body["source"] == {"name": "Alpha", "url": "http://alpha.example/"}
    for address in [body["icon"], body["url"], *body["screenshots"]]:
        assert address.startswith("http://")


def test_dates_are_in_the_application_zone(api: Api) -> None:
    body = details(api, "beta-paris", "com.alpha.paid")
    assert body["date"] == "2024-03-10T13:00:00+01:00"


def test_shape_a_rewrites_stored_http_addresses_to_https(admin: CatalogueAdmin, api: Api) -> None:
    admin.load(packages=[f.package(9, 2, "com.beta.plain", icon="http://old.example/i.png")])
    assert details(api, "alpha-a", "com.beta.plain")["icon"] == "https://old.example/i.png"
    assert details(api, "alpha-b", "com.beta.plain")["icon"] == "http://old.example/i.png"


def test_any_key_reads_any_online_package(api: Api) -> None:
    body = details(api, "beta-a", "com.alpha.paid")
    assert body["package"] == "com.alpha.paid"


def test_free_package_has_zero_price(api: Api) -> None:
    assert details(api, "beta-a", "com.alpha.free")["price"] == "0.00"


def test_offline_package_only_for_its_own_source(api: Api) -> None:
    own = details(api, "alpha-a", "com.alpha.offline")
    assert own["online"] == "0"
    other = api.get(DETAILS, api.keys["beta-a"], package="com.alpha.offline")
    assert other.status_code == 404
    assert other.json()["code"] == 8


def test_unknown_package_is_code_8_naming_it(api: Api) -> None:
    response = api.get(DETAILS, api.keys["alpha-a"], package="com.nobody.nothing")
    assert response.status_code == 404
    assert response.json() == {
        "code": 8,
        "response": "package: no package 'com.nobody.nothing' in this catalogue",
    }


@pytest.mark.parametrize("package", [None, "", "   "])
def test_missing_package_is_code_2(api: Api, package: str | None) -> None:
    response = api.get(DETAILS, api.keys["alpha-a"], package=package)
    assert response.status_code == 400
    assert response.json()["code"] == 2
    assert response.json()["response"].startswith("package: ")


@pytest.mark.parametrize(("stored", "shown"), [("2.5", "2.50"), ("0", "0.00"), ("1.999", "1.999")])
def test_prices_show_at_least_two_decimals(
    admin: CatalogueAdmin, api: Api, stored: str, shown: str
) -> None:
    admin.load(packages=[f.package(9, 2, "com.beta.priced", price=stored)])
    assert details(api, "alpha-a", "com.beta.priced")["price"] == shown


def test_price_changes_are_seen_on_the_next_request(admin: CatalogueAdmin, api: Api) -> None:
    from sqlalchemy import update

    from pkgcat.storage import schema

    assert details(api, "alpha-a", "com.alpha.paid")["price"] == "1.99"
    with admin.engine.begin() as db:
        db.execute(update(schema.packages).where(schema.packages.c.id == 1).values(price="2.99"))
    assert details(api, "alpha-a", "com.alpha.paid")["price"] == "2.99"


def test_unicode_fields_survive(admin: CatalogueAdmin, api: Api) -> None:
    admin.load(packages=[f.package(9, 2, "com.beta.unicode", name="Émoji ✓ 日本", author="Zoë")])
    body = details(api, "alpha-a", "com.beta.unicode")
    assert (body["name"], body["author"]) == ("Émoji ✓ 日本", "Zoë")


def test_deployment_shape_b(make_api: AppFactory) -> None:
    api = make_api(shape="B")
    assert "sha256" not in details(api, "alpha-a", "com.alpha.paid")


def test_shape_b_dates_are_in_the_application_zone(admin: CatalogueAdmin, api: Api) -> None:
    issued = admin.load(
        applications=[f.application(5, 1, "b-paris", shape="B", timezone="Europe/Paris")]
    )
    body = api.get(DETAILS, issued[5].secret_key, package="com.alpha.paid").json()["response"]
    assert body["date"] == "2024-03-10 13:00:00"
