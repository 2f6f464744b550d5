"""Settings: defaults, environment, and clear refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def test_the_server_factory_moves_startup_objects_out_of_the_collector(tmp_path: Path) -> None:
    # In a process of its own: freezing the collector is process-wide.
    script = (
        "import gc; from pkgcat.app import app_from_environment, GC_THRESHOLDS; "
        "app_from_environment(); "
        "print(gc.get_freeze_count() > 10_000, gc.get_threshold() == GC_THRESHOLDS)"
    )
    env = {**os.environ, "PKGCAT_DATABASE_URL": f"sqlite:///{tmp_path / 'gc.db'}"}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["True", "True"]
