"""The short soak: a real server under a bounded mixed load, its memory, files and WAL sampled.

``make soak`` runs the long one (300,000 requests, ``bench/soak.py``); these run in CI.
Each load is bounded in count, and the server stops with the test.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from bench import soak

pytestmark = [
    pytest.mark.server,
    pytest.mark.soak,
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="samples the server's workers in /proc"),
]


def test_a_mixed_soak_keeps_memory_open_files_and_the_wal_flat(tmp_path: Path) -> None:
    # A bounded set of spellings: the caches fill during the warm-up, then stay.
    run = soak.soak(tmp_path, requests=20_000, spellings=2_000, clients=8, client="httpx")
    assert run.samples[-1].requests == 20_000
    # Every kind of answer of the mix came back, and no request failed inside.
    assert {200, 400, 401, 403, 404} <= set(run.statuses)
    assert 500 not in run.statuses
    found = soak.verdict(run.samples)
    assert found.problems == []


def test_the_wal_stays_bounded_with_two_workers_and_an_import_under_load(tmp_path: Path) -> None:
    """The suspects of the WAL's growth together: two workers, and a large import during load.

    With wrk's load instead of this one, the file grew by 13 MiB a second before
    the fix; ``tests/unit/test_sqlite_store.py`` holds the test that failed then.
    """
    run = soak.soak(
        tmp_path,
        requests=10_000,
        spellings=2_000,
        workers=2,
        clients=8,
        client="httpx",
        import_stanzas=20_000,
        sample_every=0.2,
    )
    assert run.imports >= 1
    wal = max(sample.wal_mib for sample in run.samples)
    assert wal <= soak.WAL_LIMIT_MIB, f"the WAL file reached {wal:.1f} MiB"
