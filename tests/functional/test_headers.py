"""Every answer the app gives says how to cache it and not to sniff it (docs/reliability.md)."""

from __future__ import annotations

import pytest

from tests.conftest import Api, AppFactory

DETAILS = "/1.0/package/details.json"


def _api_answers(api: Api) -> list[tuple[str, int, str]]:
    """(what, status, Cache-Control) of one answer of each kind on the API paths."""
    key = api.keys["alpha-a"]
    answers = {
        "details": api.get(DETAILS, key, package="com.alpha.paid"),
        "usage": api.get("/1.0/application/usage.json", key),
        "buyers": api.get("/1.0/package/buyers.json", key, package="com.alpha.paid"),
        "unknown package": api.get(DETAILS, key, package="com.nothing"),
        "wrong key": api.get(DETAILS, "pkc_" + "0" * 40, package="com.alpha.paid"),
        "no key": api.get(DETAILS, package="com.alpha.paid"),
        "unknown endpoint": api.http.get("/1.0/nothing.json"),
        "unknown version": api.http.get("/2.0/package/details.json"),
        "method": api.http.post(DETAILS),
    }
    found = []
    for what, response in answers.items():
        assert response.headers["x-content-type-options"] == "nosniff", what
        assert response.headers["x-request-id"], what
        found.append((what, response.status_code, response.headers["cache-control"]))
    return found


def test_api_answers_are_never_stored_nor_sniffed(api: Api) -> None:
    for what, _, cache_control in _api_answers(api):
        assert cache_control == "no-store", what


def test_a_spent_limit_is_never_stored_nor_sniffed(make_api: AppFactory) -> None:
    api = make_api(rate_limit="1/hour")
    key = api.keys["alpha-a"]
    api.get(DETAILS, key, package="com.alpha.paid")
    refused = api.get(DETAILS, key, package="com.alpha.paid")
    assert refused.status_code == 429
    assert refused.headers["cache-control"] == "no-store"
    assert refused.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    ("path", "status", "cache_control"),
    [
        ("/openapi.json", 200, "no-cache"),
        ("/docs", 200, "no-cache"),
        ("/docs/static/swagger-ui.css", 200, "public, max-age=86400"),
        ("/healthz", 200, "no-store"),
        ("/readyz", 200, "no-store"),
        ("/", 307, "no-store"),
        ("/nothing", 404, "no-store"),
        ("/docs/static/nothing.js", 404, "no-store"),
    ],
)
def test_every_other_answer_says_how_to_cache_it(
    api: Api, path: str, status: int, cache_control: str
) -> None:
    response = api.http.get(path, follow_redirects=False)
    assert response.status_code == status
    assert response.headers["cache-control"] == cache_control
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-request-id"]


def test_a_static_file_not_modified_keeps_its_cache_policy(api: Api) -> None:
    first = api.http.get("/docs/static/swagger-ui.css")
    again = api.http.get(
        "/docs/static/swagger-ui.css", headers={"if-none-match": first.headers["etag"]}
    )
    assert again.status_code == 304
    assert again.headers["cache-control"] == "public, max-age=86400"


def test_a_method_not_allowed_outside_the_api_is_never_stored(api: Api) -> None:
    response = api.http.post("/openapi.json")
    assert response.status_code == 405
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-content-type-options"] == "nosniff"
