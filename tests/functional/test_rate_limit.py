"""The rate limit: decision 7 of docs/api.md."""

from __future__ import annotations

import secrets
import socket

import pytest

from tests.conftest import AppFactory, stored_count

USAGE = "/1.0/application/usage.json"
DETAILS = "/1.0/package/details.json"


def test_every_authenticated_response_carries_the_headers(make_api: AppFactory) -> None:
    api = make_api(rate_limit="5/minute")
    ok = api.get(USAGE, api.keys["alpha-a"])
    assert ok.headers["ratelimit-limit"] == "5"
    assert ok.headers["ratelimit-remaining"] == "4"
    assert 1 <= int(ok.headers["ratelimit-reset"]) <= 60
    assert ok.headers["ratelimit-policy"] == "5;w=60"  # 5 requests per window of 60 s
    failed = api.get(DETAILS, api.keys["alpha-a"], package="missing")
    assert failed.status_code == 404
    assert failed.headers["ratelimit-remaining"] == "3"
    assert failed.headers["ratelimit-policy"] == "5;w=60"


def test_the_limit_is_shared_by_the_three_operations_and_refusals_are_not_counted(
    make_api: AppFactory, database_url: str
) -> None:
    api = make_api(rate_limit="5/minute")
    key = api.keys["alpha-a"]
    api.get(USAGE, key)
    api.get(DETAILS, key, package="com.alpha.paid")
    api.get("/1.0/package/buyers.json", key, package="com.alpha.paid")
    api.get(USAGE, key)
    last = api.get(USAGE, key, days=1)
    assert last.headers["ratelimit-remaining"] == "0"
    assert last.json()["response"][-1]["usage"] == 5
    for _ in range(3):
        refused = api.get(DETAILS, key, package="com.alpha.paid")
        assert refused.status_code == 429
        body = refused.json()
        assert body["code"] == 13
        assert body["response"].startswith("rate limit exceeded")
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert refused.headers["ratelimit-remaining"] == "0"
    # The refused requests were never counted...
    assert stored_count(database_url, 1) == 5
    # ...and another application of the same server has a limit of its own.
    assert api.get(USAGE, api.keys["alpha-b"], days=1).headers["ratelimit-remaining"] == "4"


def test_default_limit_is_3600_per_hour(make_api: AppFactory) -> None:
    api = make_api()
    response = api.get(USAGE, api.keys["alpha-a"])
    assert response.headers["ratelimit-limit"] == "3600"
    assert int(response.headers["ratelimit-reset"]) <= 3600
    assert response.headers["ratelimit-policy"] == "3600;w=3600"


def test_unauthenticated_requests_do_not_spend_the_limit(make_api: AppFactory) -> None:
    api = make_api(rate_limit="2/minute")
    for _ in range(5):
        assert api.get(USAGE, "pkc_" + "z" * 40).status_code == 401
    assert api.get(USAGE, api.keys["alpha-a"]).headers["ratelimit-remaining"] == "1"


def test_an_unknown_limit_storage_is_refused_by_the_settings(make_api: AppFactory) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="not a rate-limit storage"):
        make_api(rate_limit_storage="bogus://x")


@pytest.mark.parametrize("value", ["lots", "5/fortnight", "-1/minute"])
def test_a_malformed_limit_is_refused_by_the_settings(make_api: AppFactory, value: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="rate limit"):
        make_api(rate_limit=value)


@pytest.fixture
def redis_namespace() -> str:
    """A namespace no other test or run shares."""
    return f"test-{secrets.token_hex(6)}"


def test_workers_share_one_limit_through_redis(
    make_api: AppFactory, redis_url: str, redis_namespace: str
) -> None:
    settings = {
        "rate_limit": "3/minute",
        "redis_url": redis_url,
        "rate_limit_namespace": redis_namespace,
    }
    first, second = make_api(**settings), make_api(**settings)  # two workers, one Redis
    key = first.keys["alpha-a"]
    assert first.get(USAGE, key).headers["ratelimit-remaining"] == "2"
    assert second.get(USAGE, key).headers["ratelimit-remaining"] == "1"
    assert first.get(USAGE, key).headers["ratelimit-remaining"] == "0"
    refused = second.get(USAGE, key)
    assert refused.status_code == 429
    assert refused.json()["code"] == 13
    # Another namespace (another catalogue on the same Redis) is not affected.
    other = make_api(**(settings | {"rate_limit_namespace": redis_namespace + "-other"}))
    assert other.get(USAGE, key).status_code == 200


def test_the_older_storage_setting_still_selects_redis(
    make_api: AppFactory, redis_url: str, redis_namespace: str
) -> None:
    settings = {
        "rate_limit": "1/minute",
        "rate_limit_storage": redis_url,
        "rate_limit_namespace": redis_namespace,
    }
    first, second = make_api(**settings), make_api(**settings)
    key = first.keys["alpha-a"]
    assert first.get(USAGE, key).status_code == 200
    assert second.get(USAGE, key).status_code == 429


def test_with_redis_down_requests_are_served_and_counted_without_the_limit(
    make_api: AppFactory, database_url: str
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    api = make_api(rate_limit="2/minute", redis_url=f"redis://127.0.0.1:{port}/0")
    key = api.keys["alpha-a"]
    answers = [api.get(USAGE, key, days=1) for _ in range(4)]
    # Documented: the limit fails open while Redis is unreachable; usage is still counted.
    assert [a.status_code for a in answers] == [200, 200, 200, 200]
    assert answers[-1].json()["response"][-1]["usage"] == 4
    assert stored_count(database_url, 1) == 4
