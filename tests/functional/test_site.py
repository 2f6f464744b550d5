"""The paths off the API: what they show, to whom, and what they no longer serve.

/readyz says where a worker's caches stand without the catalogue's generation; guesses of
the metrics token are throttled as guesses of a key are; /docs carries a
Content-Security-Policy and serves only the files of Swagger UI its page loads; and no
redirect is built from the request's Host (tests/functional/test_transport.py tries the
same over raw sockets against a real server).
"""

from __future__ import annotations

import pytest

from pkgcat.http.site import SWAGGER_FILES
from tests.conftest import Api, AppFactory

DETAILS = "/1.0/package/details.json"
TOKEN = "scrape-" + "t" * 24


def test_readiness_says_where_the_caches_stand_but_not_the_generation(api: Api) -> None:
    assert api.get(DETAILS, api.keys["alpha-a"], package="com.alpha.paid").status_code == 200
    api.settle()
    ready = api.http.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "caches": "current"}


def test_a_guessed_metrics_token_is_throttled_as_a_guessed_key(make_api: AppFactory) -> None:
    api = make_api(metrics=True, metrics_token=TOKEN, auth_failure_limit="3/minute")
    # No token at all is no guess: never counted.
    for _ in range(5):
        assert api.http.get("/metrics").status_code == 401
    for n in range(3):
        wrong = api.http.get("/metrics", headers={"Authorization": f"Bearer wrong-{n:020d}"})
        assert wrong.status_code == 401
    refused = api.http.get("/metrics", headers={"Authorization": "Bearer wrong-again-0000000"})
    assert refused.status_code == 429
    assert refused.json()["code"] == 13
    assert int(refused.headers["retry-after"]) >= 1
    # The address is refused, the right token too (a different answer would tell the guess
    # was right), and the API's keys as well: one allowance of failures per address.
    right = api.http.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert right.status_code == 429
    assert api.get(DETAILS, api.keys["alpha-a"], package="com.alpha.paid").status_code == 429


def test_the_docs_page_forbids_framing_and_other_origins(api: Api) -> None:
    for path in ("/docs", "/docs/start.js", *(f"/docs/static/{name}" for name in SWAGGER_FILES)):
        response = api.http.get(path)
        assert response.status_code == 200, path
        policy = response.headers["content-security-policy"]
        assert "default-src 'none'" in policy, path
        assert "frame-ancestors 'none'" in policy, path
        assert response.headers["x-frame-options"] == "DENY", path
    page = api.http.get("/docs").text
    assert "<script>" not in page  # the start-up script is a file: no inline script


@pytest.mark.parametrize(
    "name",
    ["oauth2-redirect.html", "swagger-editor-bundle.js", "swagger-ui.js", "index.css", "LICENSE"],
)
def test_the_docs_serve_no_file_the_page_does_not_load(api: Api, name: str) -> None:
    response = api.http.get(f"/docs/static/{name}")
    assert response.status_code == 404
    assert response.json()["code"] == 1


@pytest.mark.parametrize("path", ["/docs/", "/metrics/", "/dashboard/assets", "/openapi.json/"])
def test_no_slash_redirect_names_the_request_s_host(make_api: AppFactory, path: str) -> None:
    api = make_api(metrics=True)
    response = api.http.get(path, headers={"Host": "evil.example"}, follow_redirects=False)
    assert response.status_code == 404
    assert "location" not in response.headers
