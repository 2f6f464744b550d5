"""Counted downloads: whole .deb files served, per package and day, and what reads them.

Files are published and fetched through the served app, on each database and
with the directory store and S3; the counts are then read back through the API
(``package/downloads.json`` and details), as a seller would.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pkgcat.repository.grants import Grants
from pkgcat.repository.keys import download_key
from pkgcat.storage.engine import engine_for
from tests.conftest import Api, AppFactory
from tests.repository.conftest import Publisher
from tests.repository.test_served import PASSPHRASE, _filenames, fetch, publish_alpha

DOWNLOADS = "/1.0/package/downloads.json"
DETAILS = "/1.0/package/details.json"


@pytest.fixture(params=("directory", "s3"))
def counted(
    request: pytest.FixtureRequest,
    make_api: AppFactory,
    pkgcat: Publisher,
    cli_env: dict[str, str],
    tmp_path: Path,
) -> tuple[Api, dict[str, Path]]:
    """The test catalogue's free and paid packages of Alpha published and served, downloads counted."""
    store, files = publish_alpha(request, pkgcat, cli_env, tmp_path)
    return make_api(repository_passphrase=PASSPHRASE, **store), files


def _series(api: Api, package: str, **params: str) -> dict[str, object]:
    answer = api.get(DOWNLOADS, api.keys["alpha-a"], package=package, **params)
    assert answer.status_code == 200, answer.text
    body: dict[str, object] = answer.json()["response"]
    return body


def _total_download(api: Api, package: str) -> int:
    return int(
        api.get(DETAILS, api.keys["alpha-a"], package=package).json()["response"]["total_download"]
    )


def test_whole_downloads_are_counted_once_each_and_show_in_details(
    counted: tuple[Api, dict[str, Path]],
) -> None:
    api, files = counted
    imported = _total_download(api, "com.alpha.free")
    path = "/repo/" + _filenames(api)["com.alpha.free"]
    data = files["free"].read_bytes()
    for _ in range(3):
        whole = fetch(api, path)
        assert whole.status_code == 200
        assert whole.content == data
    assert fetch(api, path, Range="bytes=100-1099").status_code == 206  # a part: not counted
    assert api.http.head(path).status_code == 200  # no body: not counted
    assert fetch(api, path, Range=f"bytes={len(data) + 5}-").status_code == 416
    # A resumed download: the first part, then the rest to the last byte: counted once.
    assert fetch(api, path, Range="bytes=0-999").content == data[:1000]
    assert fetch(api, path, Range="bytes=1000-").content == data[1000:]
    assert fetch(api, path, Range="bytes=0-").content == data  # the whole file, as 200

    series = _series(api, "com.alpha.free", days="2")
    assert series["downloads"] == [
        {"day": "2024-03-29", "downloads": 0},
        {"day": "2024-03-30", "downloads": 0},
        {"day": "2024-03-31", "downloads": 5},
    ]
    assert series["total"] == 5
    assert (series["start"], series["end"]) == ("2024-03-29", "2024-03-31")
    assert _total_download(api, "com.alpha.free") == imported + 5  # live, past the cache
    fetch(api, path)
    assert _total_download(api, "com.alpha.free") == imported + 6
    assert _series(api, "com.alpha.free", start="2024-03-31", end="2024-03-31")["total"] == 6


def test_a_paid_download_counts_once_through_its_grant(
    counted: tuple[Api, dict[str, Path]], database_url: str
) -> None:
    api, files = counted
    path = "/repo/" + _filenames(api)["com.alpha.paid"]
    assert fetch(api, path).status_code == 402
    engine = engine_for(database_url)
    try:
        grants = Grants(download_key(engine, PASSPHRASE), 120)
    finally:
        engine.dispose()
    url = grants.make(path, int(time.time()))
    assert fetch(api, url).content == files["paid"].read_bytes()
    assert fetch(api, url).status_code == 410  # spent: refused, and not counted
    assert _series(api, "com.alpha.paid", days="1")["total"] == 1


def test_the_downloads_of_a_package_are_its_own_sources_and_shaped(
    counted: tuple[Api, dict[str, Path]],
) -> None:
    api, _ = counted
    fetch(api, "/repo/" + _filenames(api)["com.alpha.free"])
    other = api.get(DOWNLOADS, api.keys["beta-a"], package="com.alpha.free")
    assert other.json()["code"] == 12
    shaped = api.get(DOWNLOADS, api.keys["alpha-b"], package="com.alpha.free", days="1").json()
    assert shaped["response"]["downloads"] == [
        {"day": "30-03-2024", "downloads": 0},
        {"day": "31-03-2024", "downloads": 1},
    ]
    both = api.get(
        DOWNLOADS, api.keys["alpha-a"], package="com.alpha.free", days="1", end="2024-03-31"
    )
    assert both.json()["code"] == 2
    assert both.json()["response"].startswith("days")
    unknown = api.get(DOWNLOADS, api.keys["alpha-a"], package="no.such.package")
    assert unknown.json()["code"] == 8
