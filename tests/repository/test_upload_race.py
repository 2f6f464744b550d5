"""Uploads racing on one ``Idempotency-Key``: two ``pkgcat serve`` over one database.

Twelve uploads sent at once with one key, half to each server, on SQLite and on
PostgreSQL: the key is claimed in the database before anything is published, so
one request publishes. With other files the rest are refused (code 2 naming the
key) and publish nothing; with the same file each gets the first answer, or code 16
(409, ``Retry-After``) while the first is still publishing, and never a 400.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.debs import build_deb
from tests.repository.conftest import scalar
from tests.servers import Served, environment, granted_key, seed, serving

pytestmark = [pytest.mark.server, pytest.mark.slow]

UPLOAD = "/1.0/package/upload.json"
DEB = "application/vnd.debian.binary-package"
RACERS = 12
"""The report's figure: twelve requests at once."""


@contextmanager
def two_servers(database_url: str, tmp_path: Path) -> Iterator[tuple[list[Served], str]]:
    """Two servers over the one database and blob directory; a key that may publish."""
    env = environment(database_url, blob_dir=str(tmp_path / "blobs"))
    app = seed(env)[0]
    key = granted_key(env, app, "publish")
    with (
        serving(env, tmp_path / "first.log") as first,
        serving(env, tmp_path / "second.log") as second,
    ):
        yield [first, second], key


def race(servers: list[Served], key: str, bodies: Sequence[bytes]) -> list[httpx.Response]:
    """Each body POSTed with one Idempotency-Key, all released at once, to each server in turn."""
    start = threading.Barrier(len(bodies))

    def one(n: int) -> httpx.Response:
        with httpx.Client(base_url=servers[n % len(servers)].base, timeout=60) as client:
            client.get("/healthz")  # connected before the start, so the posts leave together
            start.wait(timeout=30)
            return client.post(
                UPLOAD,
                content=bodies[n],
                headers={
                    "authorization": f"Bearer {key}",
                    "content-type": DEB,
                    "idempotency-key": "race-1",
                },
            )

    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(one, range(len(bodies))))


def published_versions(database_url: str, package: str) -> int:
    return int(
        scalar(database_url, "SELECT count(*) FROM package_records WHERE package = :p", p=package)
    )


def test_one_key_with_other_files_publishes_exactly_one_of_them(
    database_url: str, tmp_path: Path
) -> None:
    """Row 4: before the claim, 1 x 200 and 11 x 400, yet two versions were published."""
    bodies = [
        build_deb(tmp_path / str(n), "com.race.versions", f"1.{n}").read_bytes()
        for n in range(RACERS)
    ]
    with two_servers(database_url, tmp_path) as (servers, key):
        answers = race(servers, key, bodies)
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] + [400] * (RACERS - 1), [a.text for a in answers]
    for refused in (a for a in answers if a.status_code == 400):
        assert refused.json() == {
            "code": 2,
            "response": "Idempotency-Key: already used with another request body; "
            "send a new key for a new request",
        }
    (won,) = (a for a in answers if a.status_code == 200)
    assert published_versions(database_url, "com.race.versions") == 1
    kept = "SELECT version FROM package_records WHERE package = 'com.race.versions'"
    assert won.json()["response"]["version"] == scalar(database_url, kept)


def test_one_key_with_the_same_file_is_answered_once_and_never_refused(
    database_url: str, tmp_path: Path
) -> None:
    """Row 5: before the claim, 6 x 200 and 6 x 400 "published by another request meanwhile"."""
    deb = build_deb(tmp_path, "com.race.same", "2.0").read_bytes()
    with two_servers(database_url, tmp_path) as (servers, key):
        answers = race(servers, key, [deb] * RACERS)
        waiting = [a for a in answers if a.status_code == 409]
        # The first answer was kept before it was sent: asked again, each gets it.
        again = race(servers, key, [deb] * len(waiting)) if waiting else []
    assert {a.status_code for a in answers} <= {200, 409}, [a.text for a in answers]
    first = next(a.content for a in answers if a.status_code == 200)
    assert all(a.content == first for a in answers if a.status_code == 200)
    for busy in waiting:
        assert busy.json()["code"] == 16
        assert busy.json()["response"].startswith("Idempotency-Key: ")
        assert busy.headers["retry-after"] == "1"
    assert [a.status_code for a in again] == [200] * len(waiting)
    assert all(a.content == first for a in again)
    assert published_versions(database_url, "com.race.same") == 1
    assert (
        scalar(database_url, "SELECT count(*) FROM deb_files WHERE package = 'com.race.same'") == 1
    )
    assert scalar(database_url, "SELECT status FROM idempotency_records") == 200
