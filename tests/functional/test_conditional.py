"""Conditional requests (contract section 6): ETag, If-None-Match and 304, on both shapes.

Which operations carry an ETag is the table's ``etag`` flag; every served one is tried.
"""

from __future__ import annotations

import hashlib
import re

import httpx
import pytest

from pkgcat.http.openapi import served
from pkgcat.http.operations import BY_NAME
from tests.conftest import Api, AppFactory

USAGE = "/1.0/application/usage.json"
ARGUMENTS = {"package": "com.alpha.paid"}  # a paid package of alpha's source (tests/conftest.py)
TAGGED = [o.path for o in served() if o.etag]
BUYER = {"/1.0/package/check.json": {"nickname": "ada"}}
"""What else an operation needs to answer 200 (a check asks about one buyer)."""


def conditional(api: Api, path: str, key: str, tag: str, **params: str) -> httpx.Response:
    response: httpx.Response = api.http.get(
        path, params={**params, "secret_key": key}, headers={"If-None-Match": tag}
    )
    return response


def test_the_table_tags_details_and_buyers_not_usage() -> None:
    assert BY_NAME["package/details"].etag
    assert BY_NAME["package/buyers"].etag
    assert not BY_NAME["application/usage"].etag
    assert set(TAGGED) >= {"/1.0/package/details.json", "/1.0/package/buyers.json"}


@pytest.mark.parametrize("path", TAGGED)
@pytest.mark.parametrize("application", ["alpha-a", "alpha-b"])  # shape A, shape B
def test_a_current_tag_is_answered_304_without_a_body(
    api: Api, path: str, application: str
) -> None:
    key = api.keys[application]
    arguments = {**ARGUMENTS, **BUYER.get(path, {})}
    first = api.get(path, key, **arguments)
    assert first.status_code == 200
    tag = first.headers["etag"]
    assert re.fullmatch(r'"[0-9a-f]{32}"', tag)
    assert tag == '"' + hashlib.blake2b(first.content, digest_size=16).hexdigest() + '"'
    assert api.get(path, key, **arguments).headers["etag"] == tag  # stable
    for given in (tag, f'"other", {tag}', f"W/{tag}", "*"):
        again = conditional(api, path, key, given, **arguments)
        assert again.status_code == 304, given
        assert again.content == b""
        assert again.headers["etag"] == tag
        assert {"ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"} <= set(again.headers)
    stale = conditional(api, path, key, '"' + "0" * 32 + '"', **arguments)
    assert stale.status_code == 200
    assert stale.content == first.content


def test_the_shapes_have_different_tags(api: Api) -> None:
    path = "/1.0/package/details.json"
    a = api.get(path, api.keys["alpha-a"], **ARGUMENTS).headers["etag"]
    b = api.get(path, api.keys["alpha-b"], **ARGUMENTS).headers["etag"]
    assert a != b
    assert conditional(api, path, api.keys["alpha-b"], a, **ARGUMENTS).status_code == 200


def test_usage_carries_no_tag(api: Api) -> None:
    assert "etag" not in api.get(USAGE, api.keys["alpha-a"]).headers


def test_errors_carry_no_tag(api: Api) -> None:
    missing = conditional(api, "/1.0/package/details.json", api.keys["alpha-a"], "*", package="x.y")
    assert missing.status_code == 404
    assert "etag" not in missing.headers


def test_a_304_is_counted(api: Api) -> None:
    key, path = api.keys["alpha-a"], "/1.0/package/details.json"
    tag = api.get(path, key, **ARGUMENTS).headers["etag"]
    assert conditional(api, path, key, tag, **ARGUMENTS).status_code == 304
    assert conditional(api, path, key, tag, **ARGUMENTS).status_code == 304
    entries = api.get(USAGE, key, days=1).json()["response"]
    assert entries[-1]["usage"] == 4  # the 200, the two 304s and this one


def test_a_304_is_rate_limited(make_api: AppFactory) -> None:
    api = make_api(rate_limit="3/minute")
    key, path = api.keys["alpha-a"], "/1.0/package/details.json"
    tag = api.get(path, key, **ARGUMENTS).headers["etag"]
    remaining = [
        conditional(api, path, key, tag, **ARGUMENTS).headers["ratelimit-remaining"]
        for _ in range(2)
    ]
    assert remaining == ["1", "0"]
    refused = conditional(api, path, key, tag, **ARGUMENTS)
    assert refused.status_code == 429
    assert refused.json()["code"] == 13
