"""``pkgcat client downloads`` and ``Client.downloads`` against our app, in both shapes."""

from __future__ import annotations

import json
from datetime import date

import pytest
from sqlalchemy import insert

from pkgcat.client import Downloads, DownloadsDay, NotFoundError, PermissionDeniedError
from pkgcat.storage import schema as t
from pkgcat.storage.engine import engine_for
from tests.client.conftest import TERMINAL, Connect, Run, shown


@pytest.fixture(autouse=True)
def _counted(database_url: str) -> None:
    """Downloads of Alpha's free package counted on two days (the test clock's today: 03-31)."""
    engine = engine_for(database_url)
    try:
        with engine.begin() as db:
            db.execute(
                insert(t.download_days),
                [
                    {"package": "com.alpha.free", "day": "2024-03-29", "count": 7},
                    {"package": "com.alpha.free", "day": "2024-03-31", "count": 2},
                ],
            )
    finally:
        engine.dispose()


EXPECTED = Downloads(
    package="com.alpha.free",
    start=date(2024, 3, 29),
    end=date(2024, 3, 31),
    total=9,
    days=(
        DownloadsDay(date(2024, 3, 29), 7),
        DownloadsDay(date(2024, 3, 30), 0),
        DownloadsDay(date(2024, 3, 31), 2),
    ),
)


def test_the_client_reads_both_shapes_the_same(connect: Connect) -> None:
    for app in ("alpha-a", "alpha-b"):
        assert connect(app).downloads("com.alpha.free", 2) == EXPECTED
    ranged = connect("alpha-a").downloads(
        "com.alpha.free", start=date(2024, 3, 30), end=date(2024, 3, 31)
    )
    assert (ranged.total, len(ranged.days)) == (2, 2)
    with pytest.raises(PermissionDeniedError):
        connect("beta-a").downloads("com.alpha.free")
    with pytest.raises(NotFoundError):
        connect("alpha-a").downloads("no.such.package")


def test_downloads_json_csv_and_chart(run: Run) -> None:
    as_json = json.loads(
        run("alpha-b", "downloads", "com.alpha.free", "--days", "2", "--json").stdout
    )
    assert as_json == {
        "package": "com.alpha.free",
        "start": "2024-03-29",
        "end": "2024-03-31",
        "total": 9,
        "days": [
            {"day": "2024-03-29", "downloads": 7},
            {"day": "2024-03-30", "downloads": 0},
            {"day": "2024-03-31", "downloads": 2},
        ],
    }
    as_csv = run("alpha-a", "downloads", "com.alpha.free", "--days", "2", "--csv")
    assert as_csv.stdout.splitlines() == [
        "day,downloads",
        "2024-03-29,7",
        "2024-03-30,0",
        "2024-03-31,2",
    ]
    chart = shown(run("alpha-a", "downloads", "com.alpha.free", "--days", "2", env=TERMINAL))
    assert "Downloads of com.alpha.free per day (UTC)" in chart
    assert "3 days, 9 downloads" in chart
    seven, two = (
        next(line for line in chart.splitlines() if day in line)
        for day in ("2024-03-29", "2024-03-31")
    )
    assert seven.count("█") > two.count("█") > 0  # a bar per day, to scale
    plain = run("alpha-a", "downloads", "com.alpha.free", "--days", "1")
    assert plain.stdout.splitlines() == ["day\tdownloads", "2024-03-30\t0", "2024-03-31\t2"]
