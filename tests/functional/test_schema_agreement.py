"""The OpenAPI document and the server agree on every argument: what one accepts, so does the other.

Each value is checked against the parameter's schema (jsonschema) and sent to the
server: a value the document allows is never refused as invalid (code 2), and a
value it does not allow always is. Nothing a client sends is an internal error.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from pkgcat.http.openapi import openapi_document
from tests.conftest import Api

pytestmark = pytest.mark.slow

USAGE, DETAILS, BUYERS = (
    "/1.0/application/usage.json",
    "/1.0/package/details.json",
    "/1.0/package/buyers.json",
)
PAID = "com.alpha.paid"  # a paid package of alpha-a's source (tests/conftest.py)

CHECKS = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def parameter(path: str, name: str) -> dict[str, Any]:
    """The schema of one of an operation's parameters, as the document states it."""
    (found,) = (
        p["schema"]
        for p in openapi_document()["paths"][path]["get"]["parameters"]
        if p["name"] == name
    )
    schema: dict[str, Any] = found
    return schema


def allowed(path: str, name: str, value: object) -> bool:
    return Draft202012Validator(parameter(path, name)).is_valid(value)


def code(response: Any) -> int:
    assert response.status_code != 500, response.text
    value: int = response.json()["code"]
    return value


# Identifiers made of white space of every kind (ASCII and not), control characters,
# NUL, and ordinary ones, alone or around a real package.
PACKAGES = st.text(
    st.sampled_from([" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0"])
    | st.sampled_from(["\u2028", "\u3000", "\ufeff", "\x00", "\x7f", "a", ".", "é"]),
    max_size=6,
) | st.text(st.sampled_from(" \t\x0b\x1c\xa0"), max_size=3).map(lambda pad: f"{pad}{PAID}{pad}")


@pytest.mark.parametrize("path", [DETAILS, BUYERS])
@CHECKS
@given(package=PACKAGES)
@example(package="\x1c")
@example(package="a\x00b")
@example(package=" \t\r\n\x0b\x0c")
def test_a_package_is_refused_exactly_when_the_document_says(
    api: Api, path: str, package: str
) -> None:
    answer = code(api.get(path, api.keys["alpha-a"], package=package))
    assert (answer != 2) == allowed(path, "package", package), (package, answer)


# Integers of up to fourteen digits, the server's limit being twelve; some spelled
# with leading zeros or a sign (still the same integer).
INTEGERS = st.tuples(
    st.integers(-(10**14), 10**14), st.sampled_from(["", "0", "000000", "+"])
).filter(lambda pair: pair[0] >= 0 or pair[1] != "+")


@pytest.mark.parametrize(
    ("path", "name", "others"),
    [
        (USAGE, "days", {}),
        (BUYERS, "limit", {"package": PAID}),
        (BUYERS, "page", {"package": PAID}),
    ],
)
@CHECKS
@given(number=INTEGERS)
@example(number=(10**12 - 1, ""))
@example(number=(10**12, ""))
@example(number=(10**13, ""))
@example(number=(5, "0" * 20))
def test_an_integer_is_refused_exactly_when_the_document_says(
    api: Api, path: str, name: str, others: dict[str, str], number: tuple[int, str]
) -> None:
    value, prefix = number
    spelled = f"{prefix}{value}" if value >= 0 else f"-{prefix}{-value}"
    answer = code(api.get(path, api.keys["alpha-a"], **others, **{name: spelled}))
    assert (answer == 0) == allowed(path, name, value), (spelled, answer)
