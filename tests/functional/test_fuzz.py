"""Schemathesis against a real `pkgcat serve`: the served /openapi.json and the server agree.

Every check schemathesis has (server errors, status codes, headers, response
schemas, schema-valid data accepted, schema-invalid data refused, requests
without a key refused...) over every operation, authenticated with a demo key,
on both databases. In CI: a fixed seed and a small budget (25-35 s a database).
``make fuzz`` sets ``FUZZ_SECONDS`` for a long campaign with a fresh seed, which
it prints; a failure prints the command that reproduces it.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import environment, kill_marked, seed, serving

pytestmark = [pytest.mark.server, pytest.mark.slow]

SCHEMATHESIS = str(Path(sys.executable).with_name("schemathesis"))
CONFIG = Path(__file__).with_name("schemathesis.toml")
"""Where a valid request may be refused for rules beyond its parameters' schemas."""
CI_SEED, CI_EXAMPLES = 20261123, 150
"""The CI run: the same cases every time, 150 per operation and phase. With this seed that
is enough to find the thirteen-digit page the document once allowed and the server refused
(100 were not)."""


@pytest.fixture
def database(database_url: str) -> Iterator[str]:
    yield database_url
    kill_marked(database_url)  # whatever a failed test left running


def budget() -> list[str]:
    """The run's seed and size: CI's, or a campaign of ``FUZZ_SECONDS`` (``make fuzz``)."""
    seconds = os.environ.get("FUZZ_SECONDS")
    if not seconds:
        return ["--seed", str(CI_SEED), "--max-examples", str(CI_EXAMPLES)]
    return [
        "--seed",
        str(random.SystemRandom().randrange(2**32)),
        "--max-time",
        seconds,
        "--phases",
        "examples,coverage,fuzzing,stateful",
    ]


def unmeasured(env: dict[str, str]) -> dict[str, str]:
    """``env`` without coverage's variables: schemathesis runs none of pkgcat's code, and
    measuring it anyway (coverage follows every process the tests start) made it 60% slower."""
    return {name: value for name, value in env.items() if not name.startswith("COVERAGE_")}


def test_the_server_passes_every_schemathesis_check(tmp_path: Path, database: str) -> None:
    # Limits high enough never to answer 429: the key checks send bad keys to every operation.
    env = environment(database, rate_limit="1000000/hour", auth_failure_limit="1000000/hour")
    key = seed(env)[0]["secret_key"]
    with serving(env, tmp_path / "server.log") as served:
        run = subprocess.run(
            [
                SCHEMATHESIS,
                "--config-file",
                str(CONFIG),
                "run",
                f"{served.base}/openapi.json",
                "--checks",
                "all",
                "--header",
                f"Authorization: Bearer {key}",
                "--workers",
                "1",
                "--generation-database",
                "none",
                "--no-color",
                *budget(),
            ],
            cwd=tmp_path,
            env=unmeasured(env),
            capture_output=True,
            text=True,
            check=False,
        )
    summary = run.stdout[run.stdout.find("SUMMARY") :]
    print(summary)  # the cases run and the seed, shown with -s (make fuzz)
    assert run.returncode == 0, run.stdout[-20_000:] + run.stderr[-5_000:]
    assert key not in run.stdout  # the key is filtered out of what it reports
