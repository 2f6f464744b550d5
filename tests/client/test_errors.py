"""Every error code, and every answer that is not the envelope, mapped to one exception."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from pkgcat.client import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    Client,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    PkgcatError,
    ProtocolError,
    RateLimitError,
    ServerError,
)
from pkgcat.client._errors import retry_after_seconds
from tests.client.conftest import BASE, KEY, Double, answer


def call(*script: httpx.Response | Exception) -> PkgcatError:
    """The error a single package() call raises (no retries)."""
    client = Client(BASE, KEY, transport=Double(*script).transport, max_retries=0)
    with pytest.raises(PkgcatError) as caught:
        client.package("com.example.x")
    return caught.value


@pytest.mark.parametrize(
    ("code", "status", "kind"),
    [
        (2, 400, InvalidArgumentError),
        (5, 401, AuthenticationError),
        (8, 404, NotFoundError),
        (12, 403, PermissionDeniedError),
        (13, 429, RateLimitError),
        (15, 500, ServerError),
        (1, 404, APIError),
        (6, 404, APIError),
        (7, 405, APIError),
        (99, 418, APIError),
    ],
)
def test_each_code_has_its_exception_with_code_status_message_and_request_id(
    code: int, status: int, kind: type[APIError]
) -> None:
    error = call(answer(code, "what went wrong", status=status, headers={"X-Request-Id": "ab12-7"}))
    assert type(error) is kind
    assert isinstance(error, APIError)  # for the attributes below
    assert (error.code, error.status, error.message) == (code, status, "what went wrong")
    assert error.request_id == "ab12-7"
    assert str(error) == f"what went wrong (code {code}, HTTP {status}, request id ab12-7)"


def test_the_code_wins_over_an_http_200_from_an_older_server() -> None:
    error = call(answer(8, "no such package", status=200))
    assert isinstance(error, NotFoundError)
    assert error.status == 200


def test_an_unknown_code_with_a_5xx_status_is_a_server_error() -> None:
    assert isinstance(call(answer(42, "boom", status=503)), ServerError)


@pytest.mark.parametrize(
    ("message", "parameter"),
    [
        ("days: must be between 1 and 365, got 0", "days"),
        ("package: 'com.x' is free: it has no buyers", "package"),
        ("secret_key: given more than once", "secret_key"),
        ("bad request", None),
    ],
)
def test_invalid_argument_names_the_parameter_when_the_message_does(
    message: str, parameter: str | None
) -> None:
    error = call(answer(2, message))
    assert isinstance(error, InvalidArgumentError)
    assert error.parameter == parameter


def test_rate_limit_carries_retry_after() -> None:
    error = call(answer(13, "slow down", headers={"Retry-After": "17", "RateLimit-Reset": "30"}))
    assert isinstance(error, RateLimitError)
    assert error.retry_after == 17


def test_a_request_id_absent_is_none() -> None:
    error = call(answer(5, "no key"))
    assert isinstance(error, AuthenticationError)
    assert error.request_id is None


@pytest.mark.parametrize(
    ("response", "kind", "reason"),
    [
        (httpx.Response(200, text="<html>hello</html>"), ProtocolError, "not JSON"),
        (httpx.Response(200, json=[1, 2]), ProtocolError, "not a {code, response} envelope"),
        (httpx.Response(200, json={"code": "zero", "response": 1}), ProtocolError, "'zero'"),
        (httpx.Response(200, json={"code": 0}), ProtocolError, "has no response"),
        (httpx.Response(404, text="Not Found"), ProtocolError, "HTTP 404"),
        (httpx.Response(404, json={"code": 0, "response": []}), ProtocolError, "success envelope"),
        (httpx.Response(502, text="<h1>Bad Gateway</h1>"), ServerError, "HTTP 502"),
        (httpx.Response(429, text="slow down"), RateLimitError, "HTTP 429"),
        (
            httpx.Response(301, headers={"Location": "https://catalogue.test/?secret_key=pkc_x"}),
            ProtocolError,
            "redirected to https://catalogue.test/;",
        ),
    ],
)
def test_answers_that_are_not_the_envelope(
    response: httpx.Response, kind: type[APIError], reason: str
) -> None:
    error = call(response)
    assert type(error) is kind
    assert isinstance(error, APIError)
    assert reason in error.message
    assert "pkc_x" not in str(error)
    assert error.code in (None, 0)
    assert error.status == response.status_code


def test_a_digit_string_code_is_read_as_the_code() -> None:
    error = call(httpx.Response(404, json={"code": "8", "response": "gone"}))
    assert isinstance(error, NotFoundError)
    assert error.code == 8


def test_connection_failures_are_one_exception_that_names_the_server_not_the_key() -> None:
    error = call(httpx.ConnectError("connection refused"))
    assert isinstance(error, APIConnectionError)
    assert not isinstance(error, APIError)
    assert BASE in str(error)
    assert "ConnectError" in str(error)
    assert KEY not in str(error)


def test_retry_after_forms() -> None:
    now = datetime(2026, 11, 22, 10, 0, 0, tzinfo=UTC)
    assert retry_after_seconds({"retry-after": "5"}) == 5
    http_date = {"retry-after": "Sun, 22 Nov 2026 10:00:30 GMT"}
    assert retry_after_seconds(http_date, now=now) == 30
    past = {"retry-after": "Sun, 22 Nov 2026 09:00:00 GMT"}
    assert retry_after_seconds(past, now=now) == 0
    assert retry_after_seconds({"retry-after": "soon", "ratelimit-reset": "12"}) == 12
    assert retry_after_seconds({"ratelimit-reset": "9"}) == 9
    assert retry_after_seconds({}) is None
