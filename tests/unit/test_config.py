"""Settings: defaults, environment, and clear refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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
        ("metrics", "maybe", "valid boolean"),
        ("metrics_token", "short", "at least 16 characters"),
        ("auth_failure_limit", "often", "not a rate limit"),
        ("trusted_proxies", "10.0.0.1,proxy.internal", "'proxy.internal' is not an address"),
        ("header_read_timeout", "0", "greater than or equal to 1"),
        ("webhook_lease_seconds", "0.5", "greater than or equal to 1"),
        ("webhook_passphrase", "short", "at least 16 characters"),
    ],
)
def test_bad_values_are_refused_with_a_message(
    monkeypatch: pytest.MonkeyPatch, field: str, value: str, message: str
) -> None:
    monkeypatch.setenv(f"PKGCAT_{field.upper()}", value)
    with pytest.raises(ValidationError, match=message):
        Settings()


def test_a_short_metrics_token_is_refused_without_being_shown(
    run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PKGCAT_METRICS_TOKEN", "tooshort-secret")
    result = run("migrate")
    assert result.exit_code == 2
    assert (
        "PKGCAT_METRICS_TOKEN: Value error, a token needs at least 16 characters" in result.output
    )
    assert "tooshort-secret" not in result.output


def test_trusted_proxies_are_read_as_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PKGCAT_TRUSTED_PROXIES", " 10.0.0.5, 10.1.2.3/16 ,fd00::1 ")
    settings = Settings()
    assert settings.trusted_proxies == "10.0.0.5/32,10.1.0.0/16,fd00::1/128"
    assert [str(n) for n in settings.proxy_networks] == settings.trusted_proxies.split(",")


def test_a_server_workers_collector_spares_the_startup_objects(tmp_path: Path) -> None:
    """docs/architecture.md, the worker process: full collections do not walk start-up objects.

    Observed from the collector: the objects a full collection would walk right
    after the server's factory, and how many collections ten thousand new
    containers (a few hundred requests' worth of objects) set off.
    """
    # In a process of its own: what the factory does to the collector is process-wide.
    script = (
        "import gc; from pkgcat.app import app_from_environment; "
        "app_from_environment(); "
        "walked = len(gc.get_objects()); runs = []; "
        "gc.callbacks.append(lambda phase, info: runs.append(phase == 'start')); "
        "kept = [[] for _ in range(10_000)]; "
        "print(walked, sum(runs))"
    )
    env = {**os.environ, "PKGCAT_DATABASE_URL": f"sqlite:///{tmp_path / 'gc.db'}"}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    walked, collections = map(int, out.stdout.split())
    assert walked < 1_000  # out of tens of thousands alive: modules, settings, the app
    assert collections == 0
