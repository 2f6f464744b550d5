"""Settings: defaults, environment, and clear refusals."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pkgcat.config import Settings


def test_defaults() -> None:
    settings = Settings()
    assert settings.database_url == "sqlite:///./pkgcat.db"
    assert settings.shape == "A"
    assert settings.timezone == "UTC"
    assert settings.rate_limit == "3600/hour"
    assert settings.rate_limit_storage == "memory://"
    assert (settings.host, settings.port, settings.workers) == ("127.0.0.1", 8000, 1)


def test_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PKGCAT_SHAPE", "b")
    monkeypatch.setenv("PKGCAT_TIMEZONE", "Asia/Tokyo")
    monkeypatch.setenv("PKGCAT_RATE_LIMIT", "5/minute")
    settings = Settings()
    assert (settings.shape, settings.timezone, settings.rate_limit) == (
        "B",
        "Asia/Tokyo",
        "5/minute",
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("shape", "C", "'A' or 'B'"),
        ("timezone", "Mars/Olympus", "not an IANA time zone"),
        ("rate_limit", "many", "not a rate limit"),
        ("port", "70000", "less than or equal to 65535"),
    ],
)
def test_bad_values_are_refused_with_a_message(
    monkeypatch: pytest.MonkeyPatch, field: str, value: str, message: str
) -> None:
    monkeypatch.setenv(f"PKGCAT_{field.upper()}", value)
    with pytest.raises(ValidationError, match=message):
        Settings()
