"""Authentication: decision 6 of docs/api.md."""

from __future__ import annotations

import re

import pytest

from pkgcat import keys
from pkgcat.storage.admin import AdminError, CatalogueAdmin
from tests.conftest import Api, AppFactory, stored_count

USAGE = "/1.0/application/usage.json"


def test_the_key_in_the_query_is_accepted(api: Api) -> None:
    assert api.get(USAGE, api.keys["alpha-a"]).json()["code"] == 0


def test_the_key_as_a_bearer_token_is_accepted(api: Api) -> None:
    response = api.http.get(USAGE, headers={"Authorization": f"Bearer {api.keys['alpha-a']}"})
    assert response.status_code == 200
    assert response.json()["code"] == 0


def test_the_same_key_in_both_places_is_accepted(api: Api) -> None:
    key = api.keys["alpha-a"]
    response = api.http.get(
        USAGE, params={"secret_key": key}, headers={"Authorization": f"bearer {key}"}
    )
    assert response.status_code == 200


def test_an_empty_query_key_beside_a_bearer_token_is_absent(api: Api) -> None:
    response = api.http.get(
        USAGE, params={"secret_key": ""}, headers={"Authorization": f"Bearer {api.keys['alpha-a']}"}
    )
    assert response.status_code == 200


def test_query_keys_off_refuse_a_key_in_the_query_and_say_where_it_goes(
    make_api: AppFactory, database_url: str
) -> None:
    api = make_api(query_keys=False, auth_failure_limit="3/minute")
    key = api.keys["alpha-a"]
    before = stored_count(database_url, 1)
    for _ in range(5):  # no guess (the key is not looked at): the address is never refused
        refused = api.get(USAGE, key)
        assert refused.status_code == 401
        body = refused.json()
        assert body["code"] == 5
        assert body["response"].startswith("secret_key: ")
        assert "Authorization: Bearer <secret key>" in body["response"]
        assert "ratelimit-limit" not in refused.headers
    # ...even beside the right Bearer header: the query is what the logs keep.
    both = api.http.get(
        USAGE, params={"secret_key": key}, headers={"Authorization": f"Bearer {key}"}
    )
    assert both.status_code == 401
    assert stored_count(database_url, 1) == before
    bearer = {"Authorization": f"Bearer {key}"}
    assert api.http.get(USAGE, headers=bearer).status_code == 200
    assert api.http.get(USAGE, params={"secret_key": ""}, headers=bearer).status_code == 200


def test_two_different_keys_are_refused_and_not_counted(api: Api) -> None:
    response = api.http.get(
        USAGE,
        params={"secret_key": api.keys["alpha-a"]},
        headers={"Authorization": f"Bearer {api.keys['beta-a']}"},
    )
    assert response.status_code == 401
    assert response.json()["code"] == 5
    assert "different keys" in response.json()["response"]
    assert api.get(USAGE, api.keys["alpha-a"], days=1).json()["response"][-1]["usage"] == 1


@pytest.mark.parametrize(
    "key", ["not-a-key", "pkc_" + "A" * 39, "pkc_" + "A" * 40, "pkc_" + "é" * 40]
)
def test_malformed_or_unknown_keys_are_code_5(api: Api, key: str | None) -> None:
    response = api.get(USAGE, key)
    assert response.status_code == 401
    body = response.json()
    assert body["code"] == 5
    assert body["response"].startswith("secret_key: ")
    assert "ratelimit-limit" not in response.headers


@pytest.mark.parametrize("key", [None, ""])
def test_no_key_is_code_4_as_yourepos_table_says(api: Api, key: str | None) -> None:
    """YouRepo's error table (Disqus 3.0's codes): 4, "You must be authenticated to perform
    this action", HTTP 401, apart from code 5 for a key that is sent and refused."""
    response = api.get(USAGE, key)
    assert response.status_code == 401
    body = response.json()
    assert body["code"] == 4
    assert body["response"].startswith("secret_key: missing")
    assert "ratelimit-limit" not in response.headers


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "Token pkc_x"])
def test_other_authorization_schemes_are_code_5(api: Api, header: str) -> None:
    response = api.http.get(USAGE, headers={"Authorization": header})
    assert response.status_code == 401
    assert response.json()["response"].startswith("Authorization: ")


def test_a_revoked_key_is_code_5_and_others_keep_working(admin: CatalogueAdmin, api: Api) -> None:
    key = api.keys["alpha-a"]
    spare = admin.create_key("Alpha", "alpha-a").secret_key
    assert api.get(USAGE, key).status_code == 200
    admin.revoke_key(keys.display_prefix(key))
    response = api.get(USAGE, key)
    assert response.status_code == 401
    assert response.json() == {"code": 5, "response": "secret_key: unknown or revoked secret key"}
    assert api.get(USAGE, spare).status_code == 200


def test_a_key_revoked_while_the_server_is_idle_is_refused_and_not_counted(
    admin: CatalogueAdmin, api: Api
) -> None:
    # The first request leaves the key in the worker's cache; nothing else is
    # committed before the next request, which must still see the revocation.
    key = api.keys["alpha-a"]
    spare = admin.create_key("Alpha", "alpha-a").secret_key
    assert api.get(USAGE, key).status_code == 200
    admin.revoke_key(keys.display_prefix(key))
    assert api.get(USAGE, key).status_code == 401
    assert api.get(USAGE, key).status_code == 401
    usage = api.get(USAGE, spare, days=1).json()["response"]
    assert usage[-1]["usage"] == 2  # the first request and this one


def test_a_key_repeated_in_the_query_is_refused(api: Api) -> None:
    key = api.keys["alpha-a"]
    response = api.http.get(f"{USAGE}?secret_key={key}&secret_key={key}")
    assert response.json()["code"] == 5


def test_keys_have_the_documented_form_and_are_stored_only_as_hashes(
    admin: CatalogueAdmin, api: Api
) -> None:
    key = api.keys["alpha-a"]
    assert re.fullmatch(r"pkc_[0-9A-Za-z]{40}", key)
    with admin.engine.connect() as db:
        dump = "\n".join(str(row) for row in db.exec_driver_sql("SELECT * FROM secret_keys"))
    assert key not in dump
    assert key[len("pkc_") :] not in dump
    assert keys.hash_key(key) in dump
    assert keys.display_prefix(key) in dump


def test_last_used_time_is_recorded(admin: CatalogueAdmin, api: Api) -> None:
    api.get(USAGE, api.keys["alpha-a"])
    used = {k.prefix: k.last_used_at for k in admin.list_keys()}
    assert used[keys.display_prefix(api.keys["alpha-a"])] is not None
    assert used[keys.display_prefix(api.keys["beta-a"])] is None


def test_revoking_needs_an_unambiguous_prefix(admin: CatalogueAdmin, api: Api) -> None:
    from sqlalchemy import insert

    from pkgcat.storage import schema

    with admin.engine.begin() as db:
        db.execute(
            insert(schema.secret_keys),
            [
                {
                    "application_id": 1,
                    "key_hash": "a" * 64,
                    "prefix": "pkc_TEST0001",
                    "created_at": 0,
                },
                {
                    "application_id": 1,
                    "key_hash": "b" * 64,
                    "prefix": "pkc_TEST0002",
                    "created_at": 0,
                },
            ],
        )
    with pytest.raises(AdminError, match="at least 8 characters"):
        admin.revoke_key("pkc_")
    with pytest.raises(AdminError, match="matches 2 keys"):
        admin.revoke_key("pkc_TEST")
    with pytest.raises(AdminError, match="no live key"):
        admin.revoke_key("pkc_NOPE")
    assert admin.revoke_key("pkc_TEST0002").key.revoked_at is not None
    assert admin.revoke_key("pkc_TEST0002").already  # revoking is idempotent
    # Case matters and '_' is no wildcard: neither may reach another application's key.
    with pytest.raises(AdminError, match="no live key"):
        admin.revoke_key("pkc_test0001")
    with pytest.raises(AdminError, match="no live key"):
        admin.revoke_key("pkc_TEST_001")
    assert admin.revoke_key("pkc_TEST0001").key.prefix == "pkc_TEST0001"


def test_new_keys_are_distinct() -> None:
    generated = {keys.new_key() for _ in range(1000)}
    assert len(generated) == 1000
    assert all(keys.is_well_formed(k) for k in generated)
