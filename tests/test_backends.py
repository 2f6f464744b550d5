"""Where the tests find PostgreSQL and Redis: the variables, else the default local addresses.

`make test` on a machine that runs both at their usual places uses them with no variable
set; a service that is nowhere skips its tests (and fails them under CI).
"""

from __future__ import annotations

import pytest

from tests.backends import DEFAULT_URLS, POSTGRES_VARIABLE, REDIS_VARIABLE, service_url
from tests.servers import free_port

SERVICES = [(POSTGRES_VARIABLE, "PostgreSQL"), (REDIS_VARIABLE, "Redis")]


@pytest.mark.parametrize(("variable", "what"), SERVICES)
def test_without_its_variable_a_service_answering_at_its_default_address_is_used(
    monkeypatch: pytest.MonkeyPatch, variable: str, what: str
) -> None:
    monkeypatch.delenv(variable, raising=False)
    assert service_url(variable, what) == DEFAULT_URLS[variable]


@pytest.mark.parametrize(("variable", "what"), SERVICES)
def test_the_variable_names_the_service_wherever_it_is(
    monkeypatch: pytest.MonkeyPatch, variable: str, what: str
) -> None:
    elsewhere = DEFAULT_URLS[variable].replace("127.0.0.1", "192.0.2.1")  # TEST-NET: nothing
    monkeypatch.setenv(variable, elsewhere)
    assert service_url(variable, what) == elsewhere


@pytest.mark.parametrize(("variable", "what"), SERVICES)
@pytest.mark.parametrize("ci", [None, "true"])
def test_a_service_that_answers_nowhere_skips_its_tests_or_fails_them_in_ci(
    monkeypatch: pytest.MonkeyPatch, variable: str, what: str, ci: str | None
) -> None:
    monkeypatch.delenv(variable, raising=False)
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    nowhere = (
        DEFAULT_URLS[variable].replace("6379", str(free_port())).replace("5432", str(free_port()))
    )
    expected = pytest.skip.Exception if ci is None else pytest.fail.Exception
    with pytest.raises(expected, match=variable):
        service_url(variable, what, nowhere)
