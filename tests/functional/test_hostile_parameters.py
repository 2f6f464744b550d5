"""Parameters built to break the parser: every one is code 2 naming it, never a 500.

An integer of more than 4,300 digits (all but a few of them leading zeros) is beyond what
Python converts from text by default; a day near the calendar's first one is beyond what a
date can be moved back from, or moved to a zone east of UTC. Leading zeros are a spelling,
and a day before 1970 is code 2, as docs/api.md says.
"""

from __future__ import annotations

import logging

import pytest

from tests.conftest import Api

ZEROS = "0" * 5000
"""Leading zeros past Python's 4,300-digit limit on converting text to an integer."""

INTEGERS = [
    ("/1.0/application/usage.json", {}, "days"),
    ("/1.0/package/buyers.json", {"package": "com.alpha.paid"}, "limit"),
    ("/1.0/package/buyers.json", {"package": "com.alpha.paid"}, "page"),
    ("/1.0/package/buyers.json", {"package": "com.alpha.paid", "cursor": ""}, "limit"),
    ("/1.0/source/packages.json", {}, "paid"),
    ("/1.0/source/packages.json", {}, "online"),
    ("/1.0/source/packages.json", {}, "limit"),
    ("/1.0/source/sales.json", {}, "limit"),
]

DAYS = [
    (path, params, name)
    for path in ("/1.0/application/usage.json", "/1.0/source/sales.json")
    for params, name in (
        ({"end": "0001-01-15"}, "end"),
        ({"start": "0001-01-01", "end": "0001-01-01"}, "start"),
        ({"start": "0001-01-01", "end": "0001-01-31"}, "start"),
        ({"start": "1969-12-31", "end": "1970-01-01"}, "start"),
    )
]


@pytest.mark.parametrize("value", ["1", "7", "0", "2"])
@pytest.mark.parametrize(("path", "params", "name"), INTEGERS)
def test_integers_beyond_the_conversion_limit_answer_as_without_their_zeros(
    api: Api,
    caplog: pytest.LogCaptureFixture,
    path: str,
    params: dict[str, str],
    name: str,
    value: str,
) -> None:
    key = api.keys["alpha-a"]
    with caplog.at_level(logging.WARNING, logger="pkgcat"):
        short = api.get(path, key, **{**params, name: value})
        long = api.get(path, key, **{**params, name: ZEROS + value})
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert long.status_code == short.status_code, long.text
    assert long.json()["code"] == short.json()["code"]
    if short.status_code == 400:  # 0 for a count, 2 (or 7) for a flag
        assert long.json()["response"].startswith(f"{name}: ")
    elif "usage" not in path:  # a usage answer holds this request's own count
        assert long.json() == short.json()


@pytest.mark.parametrize("application", ["alpha-a", "beta-paris"])
@pytest.mark.parametrize(("path", "params", "name"), DAYS)
def test_days_before_1970_are_code_2(
    api: Api,
    caplog: pytest.LogCaptureFixture,
    path: str,
    params: dict[str, str],
    name: str,
    application: str,
) -> None:
    with caplog.at_level(logging.WARNING, logger="pkgcat"):
        response = api.get(path, api.keys[application], **params)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == 2
    assert response.json()["response"].startswith(f"{name}: "), response.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
