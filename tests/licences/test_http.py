"""The licence checks over HTTP, as the clients sellers already have call them: YouRepo's
``package/check`` with ``udid`` (secret or public key) and ``package/whitelist`` with its
writes; YouRepo's error table where a client can tell (code 4, 415 "Invalid format").

YouRepo's published reference (www.yourepo.com/api/docs) answers a device's check
``{"udid": ..., "check": "success"}`` or ``"fail"``, and a whitelist page as
``{"start", "limit", "total", "page", "whitelist": [{"udid", "description"}]}`` with
``total`` a number; every body here is also checked against the OpenAPI document by the
client's hook (tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from pkgcat.storage.admin import CatalogueAdmin
from tests.conftest import Api, stored_count
from tests.licences.conftest import BOTH, BOUGHT, UNKNOWN, WHITELISTED

CHECK = "/1.0/package/check.json"
WHITELIST = "/1.0/package/whitelist.json"
ADD = "/1.0/package/whitelist/add.json"
REMOVE = "/1.0/package/whitelist/remove.json"
UDIDS = [f"00008030-{n:016X}" for n in range(37)]


def body(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    assert response.json()["code"] == 0
    return response.json()["response"]


@pytest.fixture
def public_key(admin: CatalogueAdmin, catalogue: dict[str, str]) -> str:
    return admin.create_key("Alpha", "alpha-a", kind="public").secret_key


@pytest.fixture
def writer(admin: CatalogueAdmin, catalogue: dict[str, str]) -> str:
    """A secret key of Alpha's with the whitelist scope."""
    return admin.create_key("Alpha", "alpha-a", ("whitelist",)).secret_key


@pytest.mark.parametrize("app", ["alpha-a", "alpha-b"])  # shape A, shape B
def test_a_devices_check_answers_yourepos_udid_and_check_in_both_shapes(
    api: Api, devices: None, app: str
) -> None:
    answers = {
        udid: body(api.get(CHECK, api.keys[app], package="com.alpha.paid", udid=udid))
        for udid in (BOUGHT, WHITELISTED, BOTH, UNKNOWN)
    }
    assert {u: (a["udid"], a["check"], a["owned"]) for u, a in answers.items()} == {
        BOUGHT: (BOUGHT, "success", True),
        WHITELISTED: (WHITELISTED, "success", True),
        BOTH: (BOTH, "success", True),
        UNKNOWN: (UNKNOWN, "fail", False),
    }
    # Today's fields beside them: a secret key sees the purchase.
    assert answers[BOUGHT]["purchase"] == {"txn_id": "ADA-1", "allowed_for": "package"}
    # A check by buyer answers as it always has, without YouRepo's device fields.
    by_buyer = body(api.get(CHECK, api.keys[app], package="com.alpha.paid", nickname="ada"))
    assert set(by_buyer) == {"package", "owned", "since", "purchase"}


def test_a_public_key_checks_devices_in_the_query_or_the_header_and_learns_only_owned(
    api: Api, database_url: str, devices: None, public_key: str
) -> None:
    before = stored_count(database_url, 1)
    by_query = api.http.get(
        CHECK, params={"public_key": public_key, "package": "com.alpha.paid", "udid": BOUGHT}
    )
    by_header = api.http.get(
        CHECK,
        params={"package": "com.alpha.paid", "udid": UNKNOWN},
        headers={"Authorization": f"Bearer {public_key}"},
    )
    assert body(by_query) == {
        "package": "com.alpha.paid",
        "owned": True,
        "since": None,  # never a purchase, a date or a buyer
        "purchase": None,
        "udid": BOUGHT,
        "check": "success",
    }
    assert (body(by_header)["owned"], body(by_header)["check"]) == (False, "fail")
    assert "ratelimit-limit" in by_query.headers  # its own allowance
    assert stored_count(database_url, 1) == before + 2  # counted in its application's usage
    # The same request with a secret key first, then the public key: never the cached body.
    secret = body(api.get(CHECK, api.keys["alpha-a"], package="com.alpha.paid", udid=BOTH))
    public = body(
        api.http.get(
            CHECK, params={"public_key": public_key, "package": "com.alpha.paid", "udid": BOTH}
        )
    )
    assert secret["purchase"] is not None
    assert (public["purchase"], public["since"]) == (None, None)


def test_a_public_key_is_refused_clearly_anywhere_but_a_devices_check(
    api: Api, devices: None, public_key: str
) -> None:
    by_buyer = api.http.get(
        CHECK, params={"public_key": public_key, "package": "com.alpha.paid", "nickname": "ada"}
    )
    assert (by_buyer.status_code, by_buyer.json()["code"]) == (400, 2)
    assert by_buyer.json()["response"].startswith("udid: a public key checks devices only")
    # Outside the document on purpose, so without its hook: the document lists code 9 for
    # the writes, whose scopes it is; docs/api.md (decision 6) names this refusal.
    hooks, api.http.event_hooks = api.http.event_hooks, {"response": []}
    try:
        for path, params in [
            ("/1.0/package/details.json", {"package": "com.alpha.paid"}),
            ("/1.0/application/usage.json", {}),
            (WHITELIST, {"package": "com.alpha.paid"}),
        ]:
            refused = api.http.get(path, params={**params, "public_key": public_key})
            assert (refused.status_code, refused.json()["code"]) == (403, 9), path
            assert refused.json()["response"].startswith("public_key: this is a public key")
            bearer = {"Authorization": f"Bearer {public_key}"}
            header = api.http.get(path, params=params, headers=bearer)
            assert (header.status_code, header.json()["code"]) == (403, 9), path
        for write in (ADD, "/1.0/webhook/list.json"):  # a write, and a read of a scope
            written = api.http.request(
                "POST" if write == ADD else "GET",
                write,
                json={"package": "com.alpha.paid", "udid": [BOUGHT]} if write == ADD else None,
                headers={"Authorization": f"Bearer {public_key}"},
            )
            assert (written.status_code, written.json()["code"]) == (403, 9), write
    finally:
        api.http.event_hooks = hooks


@pytest.mark.parametrize(
    ("public", "secret", "message"),
    [
        ("pkc_" + "A" * 40, None, "public_key: not a valid public key"),  # a secret key's form
        ("pkp_" + "A" * 40, None, "public_key: unknown or revoked public key"),
        ("own", "alpha-a", "public_key: the query parameter and the other key sent differ"),
    ],
)
def test_a_bad_public_key_is_code_5(
    api: Api, devices: None, public_key: str, public: str, secret: str | None, message: str
) -> None:
    params = {"package": "com.alpha.paid", "udid": BOUGHT}
    params["public_key"] = public_key if public == "own" else public
    if secret is not None:
        params["secret_key"] = api.keys[secret]
    response = api.http.get(CHECK, params=params)
    assert (response.status_code, response.json()["code"]) == (401, 5)
    assert response.json()["response"].startswith(message)


def test_the_whitelist_is_paged_as_yourepo_pages_it(
    api: Api, writer: str, catalogue: dict[str, str]
) -> None:
    added = api.http.post(
        ADD,
        json={"package": "com.alpha.paid", "udid": UDIDS[::-1], "description": "beta"},
        headers={"Authorization": f"Bearer {writer}"},
    )
    assert body(added) == {
        "package": "com.alpha.paid", "added": 37, "updated": 0, "unchanged": 0, "removed": 0,
    }  # fmt: skip
    first = body(api.get(WHITELIST, api.keys["alpha-a"], package="com.alpha.paid"))
    assert {k: first[k] for k in ("start", "limit", "total", "page")} == {
        "start": 0, "limit": 25, "total": 37, "page": 1,
    }  # fmt: skip
    assert first["whitelist"][0] == {"udid": UDIDS[0], "description": "beta"}
    assert [e["udid"] for e in first["whitelist"]] == UDIDS[:25]
    second = body(
        api.get(WHITELIST, api.keys["alpha-a"], package="com.alpha.paid", limit=500, page=1)
    )
    assert (second["limit"], len(second["whitelist"])) == (100, 37)  # at most 100
    last = body(api.get(WHITELIST, api.keys["alpha-a"], package="com.alpha.paid", page=2))
    assert (last["start"], [e["udid"] for e in last["whitelist"]]) == (25, UDIDS[25:])
    other = api.get(WHITELIST, api.keys["beta-a"], package="com.alpha.paid")
    assert (other.status_code, other.json()["code"]) == (403, 12)
    page_zero = api.get(WHITELIST, api.keys["alpha-a"], package="com.alpha.paid", page=0)
    assert (page_zero.status_code, page_zero.json()["code"]) == (400, 2)


def test_whitelist_writes_are_bulk_idempotent_scoped_and_seen_by_the_check(
    api: Api, writer: str, catalogue: dict[str, str]
) -> None:
    bearer = {"Authorization": f"Bearer {writer}"}
    check = {"package": "com.alpha.paid", "udid": UDIDS[0]}
    assert body(api.get(CHECK, api.keys["alpha-a"], **check))["check"] == "fail"
    # A form, the devices repeated or comma-separated, as Disqus writes took them.
    form = api.http.post(
        ADD,
        content=f"package=com.alpha.paid&udid={UDIDS[0]}&udid={UDIDS[1]},{UDIDS[2]}",
        headers={**bearer, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert body(form)["added"] == 3
    assert body(api.get(CHECK, api.keys["alpha-a"], **check))["check"] == "success"
    # The same request again under one Idempotency-Key: the first answer, byte for byte.
    sent = {"json": {"package": "com.alpha.paid", "udid": UDIDS[:2]}}
    keyed = {**bearer, "Idempotency-Key": "remove-1"}
    first = api.http.post(REMOVE, headers=keyed, **sent)
    again = api.http.post(REMOVE, headers=keyed, **sent)
    assert body(first)["removed"] == 2
    assert again.content == first.content
    # Without a key, simply idempotent: nothing left to remove.
    plain = api.http.post(REMOVE, headers=bearer, **sent)
    assert (body(plain)["removed"], body(plain)["unchanged"]) == (0, 2)
    assert body(api.get(CHECK, api.keys["alpha-a"], **check))["check"] == "fail"
    # A key without the whitelist scope may read it, not write it.
    read_only = api.http.post(
        ADD,
        json={"package": "com.alpha.paid", "udid": [UDIDS[5]]},
        headers={"Authorization": f"Bearer {api.keys['alpha-a']}"},
    )
    assert (read_only.status_code, read_only.json()["code"]) == (403, 9)
    assert "'whitelist'" in read_only.json()["response"]
    bad = api.http.post(ADD, json={"package": "com.alpha.paid", "udid": ["no/t"]}, headers=bearer)
    assert (bad.status_code, bad.json()["code"]) == (400, 2)
    assert bad.json()["response"].startswith("udid: ")


def test_no_key_is_code_4_and_an_invalid_one_code_5_on_every_licence_operation(
    api: Api, catalogue: dict[str, str]
) -> None:
    for path in (CHECK, WHITELIST):
        missing = api.http.get(path, params={"package": "com.alpha.paid", "udid": BOUGHT})
        assert (missing.status_code, missing.json()["code"]) == (401, 4), path
        wrong = api.http.get(path, params={"package": "com.alpha.paid", "secret_key": "nope"})
        assert (wrong.status_code, wrong.json()["code"]) == (401, 5), path
    post = api.http.post(ADD, json={"package": "com.alpha.paid", "udid": [BOUGHT]})
    assert (post.status_code, post.json()["code"]) == (401, 4)


@pytest.mark.parametrize("extension", ["xml", "jsonp", "rss"])
def test_another_output_type_is_415_with_yourepos_message_alone(
    api: Api, catalogue: dict[str, str], extension: str
) -> None:
    """YouRepo's error table: 415 "Invalid format", the one answer whose body is the message
    alone (Disqus served json, jsonp and rss; this API JSON only)."""
    response = api.http.get(
        f"/1.0/package/details.{extension}",
        params={"package": "com.alpha.paid", "secret_key": api.keys["alpha-a"]},
    )
    assert response.status_code == 415
    assert response.text == "Invalid format"
    assert response.headers["content-type"].startswith("text/plain")
    # An unknown operation is still code 1, whatever its extension.
    unknown = api.http.get("/1.0/package/nothing.xml")
    assert (unknown.status_code, unknown.json()["code"]) == (404, 1)


def test_a_public_key_spends_its_own_allowances_per_device_then_code_13(
    make_api: Any, devices: None, public_key: str
) -> None:
    """A public key does not spend its application's limit, but its own and each device's
    (docs/api.md, decision 10): a device past its allowance is refused, another is not."""
    api = make_api(public_device_limit="2/hour")
    params = {"public_key": public_key, "package": "com.alpha.paid"}
    answers = [api.http.get(CHECK, params={**params, "udid": BOUGHT}) for _ in range(3)]
    assert [r.status_code for r in answers] == [200, 200, 429]
    spent = answers[-1]
    assert spent.json()["code"] == 13
    assert spent.json()["response"].startswith("rate limit exceeded for this device with this key")
    assert int(spent.headers["retry-after"]) > 0
    other = api.http.get(CHECK, params={**params, "udid": UNKNOWN})
    assert body(other)["check"] == "fail"
    # The application's own limit was not spent by them: a secret key still has it whole.
    usage = api.get("/1.0/application/usage.json", api.keys["alpha-a"], days=1)
    assert usage.headers["ratelimit-remaining"] == str(int(usage.headers["ratelimit-limit"]) - 1)
