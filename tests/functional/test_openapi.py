"""The OpenAPI document (decision 9): valid, served, and matching the server."""

from __future__ import annotations

import re
from typing import Any

import httpx
import jsonschema
import pytest
from openapi_spec_validator import validate

from pkgcat.http.openapi import openapi_document, served
from pkgcat.http.operations import DRM_PATH
from pkgcat.http.routes import LICENCE_ROUTES, MONEY_ROUTES, ROUTES, WEBHOOK_ROUTES, WRITE_ROUTES
from tests.conftest import Api, check_against_openapi
from tests.test_docs import DOCS, read, sections


def test_the_document_is_valid_openapi_3_1() -> None:
    document = openapi_document()
    assert document["openapi"] == "3.1.0"
    validate(document)


def test_it_is_served_as_json(api: Api) -> None:
    response = api.http.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == openapi_document()


def test_it_lists_exactly_the_served_operations_reads_get_and_writes_post() -> None:
    paths = openapi_document()["paths"]
    served_paths = set(ROUTES) | set(WRITE_ROUTES) | set(WEBHOOK_ROUTES) | set(LICENCE_ROUTES)
    served_paths |= set(MONEY_ROUTES)
    assert set(paths) == served_paths | {DRM_PATH}  # and the DRM check, at Packix's path
    assert set(paths[DRM_PATH]) == {"post"}
    licences = {path: set(paths[path]) for path in LICENCE_ROUTES}
    assert licences == {
        "/1.0/package/whitelist.json": {"get"},
        "/1.0/package/whitelist/add.json": {"post"},
        "/1.0/package/whitelist/remove.json": {"post"},
    }
    assert all(set(paths[path]) == {"get"} for path in ROUTES)
    assert all(set(paths[path]) == {"post"} for path in WRITE_ROUTES)
    methods = {path: set(paths[path]) for path in WEBHOOK_ROUTES}
    assert {path for path, found in methods.items() if found == {"get"}} == {
        "/1.0/webhook/list.json",
        "/1.0/webhook/deliveries.json",
    }
    methods = {path: set(paths[path]) for path in MONEY_ROUTES}
    assert {path for path, found in methods.items() if found == {"post"}} == {
        "/1.0/purchase/refund.json"
    }
    create = paths["/1.0/webhook/create.json"]["post"]
    assert set(create["requestBody"]["content"]) == {
        "application/json",
        "application/x-www-form-urlencoded",
    }
    fields = create["requestBody"]["content"]["application/json"]["schema"]
    assert fields["required"] == ["url", "events"]
    assert {p["name"] for p in create["parameters"]} == {"Idempotency-Key"}
    upload = paths["/1.0/package/upload.json"]["post"]
    assert set(upload["requestBody"]["content"]) == {
        "application/vnd.debian.binary-package",
        "multipart/form-data",
    }
    assert {p["name"] for p in upload["parameters"]} == {"Idempotency-Key"}
    assert upload["responses"]["405"]["headers"]["Allow"]["schema"]["const"] == "POST"


def documented_errors() -> dict[str, set[int]]:
    """Each operation of docs/api.md to the codes of its "Errors:" paragraph."""
    found: dict[str, set[int]] = {}
    for heading, body in sections(read(DOCS / "api.md")).items():
        operation = re.search(r"`(?:GET|POST) (/1\.0/\S+)`", heading)
        errors = re.search(r"Errors:(.*?)(?:\n\n|$)", body, flags=re.DOTALL)
        if operation and errors:
            listed = re.sub(r"\([^)]*\)", "", errors.group(1))  # the explanations in brackets
            found[operation.group(1)] = {int(code) for code in re.findall(r"\d+", listed)}
    return found


def declared_errors(path: str) -> set[int]:
    """The codes the document declares for an operation (each error response's ``const``)."""
    codes: set[int] = set()
    (declared,) = openapi_document()["paths"][path].values()
    for status, response in declared["responses"].items():
        if status not in ("200", "304"):
            for part in response["content"]["application/json"]["schema"]["allOf"]:
                codes.update(response_codes(part))
    return codes


def response_codes(part: dict[str, Any]) -> list[int]:
    """The codes one part of an error response's schema names: its ``const``, or the ``enum``
    of the codes answered with one status (401: codes 4 and 5; 503: 15 and 16)."""
    code = part.get("properties", {}).get("code", {})
    return [code["const"]] if "const" in code else list(code.get("enum", []))


def test_every_operation_declares_the_errors_its_reference_page_lists() -> None:
    documented = documented_errors()
    every = set(ROUTES) | set(WRITE_ROUTES) | set(WEBHOOK_ROUTES) | set(LICENCE_ROUTES)
    every |= set(MONEY_ROUTES)
    assert set(documented) == every, "an operation of docs/api.md has no Errors: list"
    for path, codes in documented.items():
        assert declared_errors(path) == codes, path


def test_the_operations_with_an_etag_declare_their_304_and_if_none_match() -> None:
    """A generated client must know the 304 an ETag brings: openapi-fetch read it as an error."""
    for operation in served():
        get = openapi_document()["paths"][operation.path][operation.method.lower()]
        headers = {p["name"] for p in get["parameters"] if p["in"] == "header"}
        if operation.writes:
            assert headers == {"Idempotency-Key"}, operation.name
            continue
        if operation.etag:
            not_modified = get["responses"]["304"]
            assert "content" not in not_modified, operation.name
            assert {"ETag", "RateLimit-Remaining", "X-Request-Id"} <= set(not_modified["headers"])
            assert headers == {"If-None-Match"}, operation.name
        else:
            assert "304" not in get["responses"], operation.name
            assert headers == set(), operation.name


def test_the_codes_that_always_carry_the_rate_limit_headers_are_those_of_decision_7() -> None:
    """docs/api.md promised them on code 15, which comes before the count too (without them)."""
    promised = re.search(
        r"That includes the errors answered then:\s+codes ([\d, and]+?), and code 15 when",
        read(DOCS / "api.md"),
    )
    assert promised is not None, "decision 7 lists no codes"
    listed = {int(code) for code in re.findall(r"\d+", promised.group(1))}
    declared: dict[int, set[bool]] = {}
    for path in [*ROUTES, *WRITE_ROUTES, *WEBHOOK_ROUTES, *LICENCE_ROUTES, *MONEY_ROUTES]:
        (operation,) = openapi_document()["paths"][path].values()
        for status, response in operation["responses"].items():
            if status in ("200", "304"):
                continue
            (codes,) = (
                response_codes(part)
                for part in response["content"]["application/json"]["schema"]["allOf"]
                if "properties" in part
            )
            required = bool(response["headers"].get("RateLimit-Limit", {}).get("required"))
            if len(codes) > 1 and not required:
                continue  # two codes of one status: required only where both carry them
            for code in codes:
                declared.setdefault(code, set()).add(required)
    assert {code for code, required in declared.items() if required == {True}} == listed
    assert declared[15] == {False}  # 500 and 503: optional


def test_both_shapes_are_described() -> None:
    schemas = openapi_document()["components"]["schemas"]
    assert {"PackageA", "PackageB", "UsageEntryA", "UsageEntryB", "SourceA", "SourceB"} <= set(
        schemas
    )
    assert "sha256" in schemas["PackageA"]["properties"]
    assert "sha256" not in schemas["PackageB"]["properties"]


VALID_ARGUMENTS = {
    "/1.0/application/usage.json": {},
    "/1.0/package/details.json": {"package": "com.alpha.paid"},
    "/1.0/package/buyers.json": {"package": "com.alpha.paid"},
    "/1.0/source/packages.json": {},
    "/1.0/package/check.json": {"package": "com.alpha.paid", "nickname": "someone"},
    "/1.0/source/sales.json": {},
    "/1.0/package/downloads.json": {"package": "com.alpha.free"},
}
"""Arguments with which each operation answers 200 for ``alpha-a`` (tests/conftest.py)."""


def without_counts(body: dict[str, Any]) -> Any:
    """The response, less usage counts: each request is counted, so today's count moves."""
    response = body["response"]
    if isinstance(response, list):
        return [entry["date"] for entry in response]
    return response


def refused_as_code_2(response: httpx.Response, name: str) -> bool:
    body = response.json()
    return response.status_code == 400 and body["code"] == 2 and body["response"].startswith(name)


@pytest.mark.parametrize("path", sorted(VALID_ARGUMENTS))
def test_the_server_applies_the_bounds_and_defaults_the_document_states(
    api: Api, path: str
) -> None:
    """Each parameter of the document, tried against the server at and beyond what it states."""
    key, valid = api.keys["alpha-a"], VALID_ARGUMENTS[path]
    assert set(ROUTES) == set(VALID_ARGUMENTS)
    for parameter in openapi_document()["paths"][path]["get"]["parameters"]:
        name, schema = parameter["name"], parameter["schema"]
        others = {k: v for k, v in valid.items() if k != name}
        if parameter["required"]:
            assert refused_as_code_2(api.get(path, key, **others), name), name
        if schema["type"] != "integer":
            continue
        if "default" in schema:  # omitting the parameter is giving its default
            omitted = api.get(path, key, **others)
            given = api.get(path, key, **others, **{name: schema["default"]})
            assert without_counts(omitted.json()) == without_counts(given.json()), name
        assert api.get(path, key, **others, **{name: schema["minimum"]}).status_code == 200
        below = api.get(path, key, **others, **{name: schema["minimum"] - 1})
        assert refused_as_code_2(below, name), name
        if "maximum" in schema:
            assert api.get(path, key, **others, **{name: schema["maximum"]}).status_code == 200
            above = api.get(path, key, **others, **{name: schema["maximum"] + 1})
            assert refused_as_code_2(above, name), name


def test_the_docs_page_works_offline(api: Api) -> None:
    page = api.http.get("/docs")
    assert page.status_code == 200
    assert '<script src="/docs/start.js">' in page.text
    assert "/openapi.json" in api.http.get("/docs/start.js").text
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


def test_a_generator_reads_days_as_dates_and_check_json_rule_from_the_document() -> None:
    """Dates are ``format: date`` (so ``0000-00-00`` is not schema-valid), and each of
    check.json's alternatives says that exactly one of them is given."""
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    days = 0
    for path, item in openapi_document()["paths"].items():
        for parameter in item.get("get", {}).get("parameters", []):
            schema = parameter["schema"]
            if schema.get("format") != "date":
                continue
            days += 1
            validator = jsonschema.Draft202012Validator(schema, format_checker=checker)
            assert validator.is_valid("2024-02-29"), (path, parameter["name"])
            assert not validator.is_valid("0000-00-00"), (path, parameter["name"])
            assert not validator.is_valid("2023-02-29"), (path, parameter["name"])
    assert days >= 4  # start and end of usage and of sales at least
    check = openapi_document()["paths"]["/1.0/package/check.json"]["get"]["parameters"]
    for parameter in check:
        if parameter["name"] in {"nickname", "account", "udid"}:
            assert "Exactly one of `nickname`, `account` and `udid`" in parameter["description"]


def test_each_caller_gets_a_document_of_its_own() -> None:
    """The document is built once a process: what one caller changes, no other sees."""
    mine = openapi_document()
    mine["paths"].clear()
    mine["info"]["title"] = "changed"
    theirs = openapi_document()
    assert theirs["paths"]
    assert theirs["info"]["title"] == "Package Catalogue API"


def test_the_tests_response_check_refuses_what_the_document_does_not_declare(api: Api) -> None:
    """Every test's answers go through :func:`check_against_openapi` (its validators made once
    a process): a body its schema refuses, one of another status, and one answered a second
    time after a refusal are each told, not let through."""
    path = "/1.0/package/details.json"
    good = api.get(path, api.keys["alpha-a"], package="com.alpha.paid")
    check_against_openapi(path, good)

    def answer(status: int, body: object) -> httpx.Response:
        return httpx.Response(status, json=body, headers=good.headers, request=good.request)

    wrong = {**good.json(), "code": "zero"}
    with pytest.raises(jsonschema.ValidationError, match="'zero' is not of type 'integer'"):
        check_against_openapi(path, answer(200, wrong))
    with pytest.raises(AssertionError, match="answered 418, not in the document"):
        check_against_openapi(path, answer(418, good.json()))
    check_against_openapi(path, answer(200, good.json()))  # the same validator, still sound
    with pytest.raises(jsonschema.ValidationError):
        check_against_openapi(path, answer(200, {"code": 0}))
