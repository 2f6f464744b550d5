"""The Packix/Havoc DRM check at Packix's own path, as a public middleman calls it.

guillermo-moran/Packix-DRM-Middleman, middleman.php at 4ffe894: line 23 posts to
``https://repo.packix.com/api/drm/check``; lines 29-35 build the body
``{"user": {"udid", "model", "identifier", "token"}}``, sent as JSON (line 41,
``Content-Type:application/json``). DRMUtils.m at 7c4c153 reads the answer: line 59 wants
HTTP 200, line 64 reads ``status``, lines 66-73 take ``"completed"`` as owned, ``"failed"``
as not owned and anything else as an error. A seller who points ``$url`` at pkgcat changes
nothing else."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from pkgcat.storage.admin import CatalogueAdmin
from tests.conftest import Api, stored_count
from tests.licences.conftest import BOUGHT, MODEL, UNKNOWN, WHITELISTED

DRM = "/api/drm/check"


def user(token: str | None, udid: str | None, package: str = "com.alpha.paid") -> dict[str, Any]:
    """middleman.php's body (lines 29-35)."""
    return {"user": {"udid": udid, "model": MODEL, "identifier": package, "token": token}}


def status(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["status"]


def test_a_middlemans_body_is_answered_completed_or_failed(
    api: Api, admin: CatalogueAdmin, database_url: str, devices: None
) -> None:
    seller = api.keys["alpha-a"]  # a seller token: a secret key of the source
    package = admin.create_key("Alpha", "alpha-b", kind="public", package="com.alpha.paid")
    before = stored_count(database_url, 1)
    answers = [
        status(api.http.post(DRM, json=user(token, udid)))
        for token in (seller, package.secret_key)
        for udid in (BOUGHT, WHITELISTED, UNKNOWN)
    ]
    assert answers == [(200, "completed"), (200, "completed"), (200, "failed")] * 2
    only = api.http.post(DRM, json=user(seller, BOUGHT))
    assert only.json() == {"status": "completed"}  # nothing else to read
    assert only.headers["content-type"] == "application/json"
    assert stored_count(database_url, 1) == before + 4  # counted as any check is


def test_the_token_may_come_in_a_header_instead(api: Api, devices: None) -> None:
    seller = api.keys["alpha-a"]
    for headers in ({"token": seller}, {"Authorization": f"Bearer {seller}"}):
        response = api.http.post(DRM, json=user(None, BOUGHT), headers=headers)
        assert status(response) == (200, "completed"), headers
    # The fields at the top, without "user", are read too.
    flat = api.http.post(DRM, json=user(seller, UNKNOWN)["user"])
    assert status(flat) == (200, "failed")


@pytest.mark.parametrize(
    ("token", "udid", "package", "http", "code"),
    [
        (None, BOUGHT, "com.alpha.paid", 401, 4),
        ("00000", BOUGHT, "com.alpha.paid", 401, 5),  # middleman.php's placeholder (line 19)
        ("alpha-a", BOUGHT, "com.beta.paid", 403, 12),  # another seller's package
        ("alpha-a", None, "com.alpha.paid", 400, 2),
        ("alpha-a", "not/a/udid", "com.alpha.paid", 400, 2),
    ],
)
def test_what_is_not_a_check_is_neither_completed_nor_failed(
    api: Api, devices: None, token: str | None, udid: str | None, package: str, http: int, code: int
) -> None:
    """DRMUtils.m (lines 59 and 72) takes a status other than 200, or any other ``status``,
    as an error: never as owned nor as not owned."""
    key = api.keys.get(token, token) if token is not None else None
    response = api.http.post(DRM, json=user(key, udid, package))
    assert response.status_code == http
    assert response.json()["status"] == "error"
    assert response.json()["code"] == code


def test_only_a_json_post_is_a_check(api: Api, devices: None) -> None:
    get = api.http.get(DRM)
    assert (get.status_code, get.json()["status"], get.headers["allow"]) == (405, "error", "POST")
    broken = api.http.post(
        DRM, content=b"UDID=1&modelID=2", headers={"Content-Type": "application/json"}
    )
    assert (broken.status_code, broken.json()["code"]) == (400, 2)
    large = api.http.post(DRM, json={"user": {"udid": "0" * 5000}})
    assert (large.status_code, large.json()["code"]) == (400, 2)
