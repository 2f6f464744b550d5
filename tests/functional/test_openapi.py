"""The OpenAPI document (decision 9): valid, served, and matching the server."""

from __future__ import annotations

from openapi_spec_validator import validate

from pkgcat.errors import ERROR_TABLE
from pkgcat.http.openapi import openapi_document
from pkgcat.http.routes import ROUTES
from tests.conftest import Api


def test_the_document_is_valid_openapi_3_1() -> None:
    document = openapi_document()
    assert document["openapi"] == "3.1.0"
    validate(document)


def test_it_is_served_as_json(api: Api) -> None:
    response = api.http.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == openapi_document()


def test_it_lists_exactly_the_served_operations_all_get() -> None:
    paths = openapi_document()["paths"]
    assert set(paths) == set(ROUTES)
    assert all(set(item) == {"get"} for item in paths.values())


def test_every_operation_declares_the_errors_it_can_answer() -> None:
    by_code = {e.code: e.status for e in ERROR_TABLE}
    paths = openapi_document()["paths"]
    expected = {
        "/1.0/application/usage.json": {2, 5, 7, 13, 15},
        "/1.0/package/details.json": {2, 5, 7, 8, 13, 15},
        "/1.0/package/buyers.json": {2, 5, 7, 8, 12, 13, 15},
    }
    for path, codes in expected.items():
        responses = paths[path]["get"]["responses"]
        assert set(responses) == {"200"} | {str(by_code[c]) for c in codes}


def test_both_shapes_are_described() -> None:
    schemas = openapi_document()["components"]["schemas"]
    assert {"PackageA", "PackageB", "UsageEntryA", "UsageEntryB", "SourceA", "SourceB"} <= set(
        schemas
    )
    assert "sha256" in schemas["PackageA"]["properties"]
    assert "sha256" not in schemas["PackageB"]["properties"]


def test_parameters_state_the_bounds_the_server_applies() -> None:
    paths = openapi_document()["paths"]
    (days,) = paths["/1.0/application/usage.json"]["get"]["parameters"]
    assert days["schema"] == {"type": "integer", "default": 30, "minimum": 1, "maximum": 365}
    params = {p["name"]: p for p in paths["/1.0/package/buyers.json"]["get"]["parameters"]}
    assert params["limit"]["schema"]["default"] == 25
    assert params["page"]["schema"]["minimum"] == 1
    assert params["package"]["required"] is True


def test_the_docs_page_works_offline(api: Api) -> None:
    page = api.http.get("/docs")
    assert page.status_code == 200
    assert "/openapi.json" in page.text
    for asset in ("/docs/static/swagger-ui-bundle.js", "/docs/static/swagger-ui.css"):
        response = api.http.get(asset)
        assert response.status_code == 200, asset
        assert len(response.content) > 1000


def test_health_and_home(api: Api) -> None:
    assert api.http.get("/healthz").json() == {"status": "ok"}
    home = api.http.get("/", follow_redirects=False)
    assert home.status_code in (302, 307)
    assert home.headers["location"] == "/docs"


def test_unknown_non_api_paths_and_methods_get_the_envelope(api: Api) -> None:
    missing = api.http.get("/docs/nothing-here")
    assert missing.status_code == 404
    assert missing.json()["code"] == 1
    wrong = api.http.post("/openapi.json")
    assert wrong.status_code == 405
    assert wrong.json()["code"] == 7
