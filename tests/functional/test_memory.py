"""A worker's memory stays bounded, whatever a client sends: a real `pkgcat serve`, on both databases.

The resident set of the one worker is read from /proc before and after a burst of
requests that the old caches would each have kept.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.servers import Served, children, environment, kill_marked, seed, serving

pytestmark = [
    pytest.mark.server,
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="reads the worker's memory from /proc"),
]

MIB = 1024 * 1024
BUYERS = "/1.0/package/buyers.json"


@pytest.fixture
def database(database_url: str) -> Iterator[str]:
    yield database_url
    kill_marked(database_url)  # whatever a failed test left running


def rss(pid: int) -> int:
    """The resident set of a process, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def worker(served: Served) -> int:
    (only,) = children(served.process.pid)
    return only.pid


def send(served: Served, key: str, queries: list[str]) -> list[bytes]:
    """Each query to the buyers operation, from 8 threads; the bodies, in order."""
    with httpx.Client(base_url=served.base, headers={"Authorization": f"Bearer {key}"}) as http:

        def one(query: str) -> bytes:
            response = http.get(f"{BUYERS}?{query}", timeout=30)
            assert response.status_code == 200, response.text
            return response.content

        with ThreadPoolExecutor(8) as pool:
            return list(pool.map(one, queries))


def test_spellings_of_one_request_share_one_cache_entry(tmp_path: Path, database: str) -> None:
    env = environment(database, rate_limit="1000000/hour")
    app = seed(env)[0]
    key, package = app["secret_key"], app["paid_package"]
    # One page of 100 buyers (about 26 KB), asked for in 3,000 spellings: a page size
    # above the maximum is clamped to it, and white space around the package is ignored.
    spellings = [
        f"package={pad}{package}{pad}&limit={limit}&page=01"
        for limit in range(100, 1600)
        for pad in ("", "%20")
    ]
    with serving(env, tmp_path / "server.log") as served:
        pid = worker(served)
        first = send(served, key, spellings[:50])  # the worker's own start-up allocations
        before = rss(pid)
        bodies = send(served, key, spellings)
        grown = rss(pid) - before
    assert set(bodies) == {first[0]}
    # Kept once per spelling, the pages would take 3,000 x 26 KB = 78 MiB.
    assert grown < 16 * MIB, f"the worker grew by {grown / MIB:.1f} MiB"


def test_distinct_answers_stay_within_the_cache_budget(tmp_path: Path, database: str) -> None:
    env = environment(database, rate_limit="1000000/hour", cache_max_bytes=str(2 * MIB))
    apps = seed(env)
    # The first two pages of every page size, for each application (each has its
    # own view of the answers): 800 distinct answers, some 15 MiB in all.
    with serving(env, tmp_path / "server.log") as served:
        pid = worker(served)
        for app in apps:
            send(served, app["secret_key"], [f"package={app['paid_package']}"])
        before = rss(pid)
        for app in apps:
            pages = [
                f"package={app['paid_package']}&limit={limit}&page={page}"
                for limit in range(1, 101)
                for page in (1, 2)
            ]
            send(served, app["secret_key"], pages)
        grown = rss(pid) - before
    # Caches bounded in entries, not bytes, kept them all: the worker grew by 15 to 17 MiB.
    assert grown < 8 * MIB, f"the worker grew by {grown / MIB:.1f} MiB"
