"""usage.json's ``start``/``end`` range and ``by=operation`` (seller API 1.1)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from pkgcat.storage.admin import CatalogueAdmin
from tests.conftest import Api, AppFactory, Clock

USAGE = "/1.0/application/usage.json"
DETAILS = "/1.0/package/details.json"
BUYERS = "/1.0/package/buyers.json"


def entries(api: Api, key: str, **params: Any) -> list[dict[str, Any]]:
    response = api.get(USAGE, key, **params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["code"] == 0
    found: list[dict[str, Any]] = body["response"]
    return found


def refusal(api: Api, key: str, **params: Any) -> str:
    """The code-2 message of a usage request with ``params``."""
    response = api.get(USAGE, key, **params)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == 2
    message: str = response.json()["response"]
    return message


def test_a_range_covers_its_days_both_ends_included(api: Api, clock: Clock) -> None:
    today = clock.now.date()
    start, end = today - timedelta(days=9), today - timedelta(days=3)
    found = entries(api, api.keys["alpha-a"], start=start.isoformat(), end=end.isoformat())
    assert [e["date"][:10] for e in found] == [
        (start + timedelta(days=n)).isoformat() for n in range(7)
    ]
    assert [e["usage"] for e in found] == [0] * 7  # this request is today's, not in the range
    assert all("operations" not in e for e in found)


def test_a_range_ending_today_reports_as_days_does(api: Api, clock: Clock) -> None:
    key, today = api.keys["alpha-a"], clock.now.date()
    by_days = entries(api, key, days=12)
    by_range = entries(api, key, start=(today - timedelta(days=12)).isoformat(), end=str(today))
    assert [e["date"] for e in by_range] == [e["date"] for e in by_days]
    assert [e["usage"] for e in by_range] == [e["usage"] for e in by_days[:-1]] + [2]


def test_either_end_alone_takes_the_other_as_days_would(api: Api, clock: Clock) -> None:
    key, today = api.keys["alpha-a"], clock.now.date()
    end = today - timedelta(days=100)
    found = entries(api, key, end=end.isoformat())
    assert len(found) == 31
    assert found[-1]["date"][:10] == end.isoformat()
    start = today - timedelta(days=4)
    found = entries(api, key, start=start.isoformat())
    assert [e["date"][:10] for e in found][::4] == [start.isoformat(), today.isoformat()]
    assert found[-1]["usage"] == 2  # both requests of this test


def test_a_single_day_and_the_longest_range(api: Api, clock: Clock) -> None:
    key, today = api.keys["alpha-a"], clock.now.date()
    assert entries(api, key, start=str(today), end=str(today))[0]["usage"] == 1
    longest = entries(api, key, start=str(today - timedelta(days=364)), end=str(today))
    assert len(longest) == 365


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"start": "T-365", "end": "T"}, "start"),  # 366 days
        ({"start": "T-400", "end": "T-10"}, "start"),
        ({"start": "T-2", "end": "T-3"}, "start"),
        ({"start": "T-2", "end": "T+1"}, "end"),
        ({"end": "T+1"}, "end"),
        ({"days": "5", "start": "T-2"}, "days"),
        ({"days": "5", "end": "T"}, "days"),
        ({"start": "2024-1-01"}, "start"),
        ({"start": "20240101"}, "start"),
        ({"end": "2023-02-29"}, "end"),
        ({"end": ""}, "end"),
        ({"start": "yesterday"}, "start"),
        ({"by": "day"}, "by"),
        ({"by": ""}, "by"),
        ({"by": "Operation"}, "by"),
    ],
)
def test_out_of_range_or_malformed_is_code_2_naming_the_parameter(
    api: Api, clock: Clock, params: dict[str, str], named: str
) -> None:
    today = clock.now.date()

    def day(value: str) -> str:
        if not value.startswith("T"):
            return value
        return (today + timedelta(days=int(value[1:] or 0))).isoformat()

    message = refusal(
        api, api.keys["alpha-a"], **{name: day(value) for name, value in params.items()}
    )
    assert message.startswith(f"{named}: "), message


def test_by_operation_splits_each_day(api: Api, clock: Clock) -> None:
    key = api.keys["alpha-a"]
    for _ in range(2):
        api.get(DETAILS, key, package="com.alpha.paid")
    api.get(BUYERS, key, package="com.alpha.paid")
    api.get(DETAILS, key, package="no.such.package")  # refused, still counted
    found = entries(api, key, days=1, by="operation")
    assert [e["operations"] for e in found] == [
        {},
        {"application/usage": 1, "package/buyers": 1, "package/details": 3},
    ]
    assert found[-1]["usage"] == 5
    # Settled days keep their split: two days on, it is read from the counts of that day.
    clock.advance(days=2)
    later = entries(api, key, days=3, by="operation")
    assert [e["operations"] for e in later] == [
        {},
        {"application/usage": 1, "package/buyers": 1, "package/details": 3},
        {},
        {"application/usage": 1},
    ]
    assert [e["usage"] for e in later] == [0, 5, 0, 1]


def test_by_operation_in_shape_b_counts_as_integers(api: Api) -> None:
    key = api.keys["alpha-b"]
    api.get(DETAILS, key, package="com.alpha.paid")
    found = entries(api, key, days=1, by="operation")
    assert found[-1]["usage"] == "2"  # shape B's last entry, as without by
    assert found[-1]["operations"] == {"application/usage": 1, "package/details": 1}
    assert found[0]["operations"] == {}


def test_plain_and_split_reports_of_one_range_are_kept_apart(
    api: Api, clock: Clock, admin: CatalogueAdmin
) -> None:
    """Both settle and are kept; neither answers for the other."""
    key, today = api.keys["alpha-a"], clock.now.date()
    api.get(DETAILS, key, package="com.alpha.paid")
    clock.advance(days=3)
    window = {"start": str(today - timedelta(days=1)), "end": str(today)}
    for _ in range(2):
        plain = entries(api, key, **window)
        split = entries(api, key, **window, by="operation")
        assert [e["usage"] for e in plain] == [0, 1]
        assert "operations" not in plain[-1]
        assert split[-1]["operations"] == {"package/details": 1}
    # Statistics the operator loads move the generation: the settled report is read again.
    admin.load(usage=[(1, today - timedelta(days=1), 7)])
    assert [e["usage"] for e in entries(api, key, **window)] == [7, 1]
    # Loaded counts come without a split.
    assert entries(api, key, **window, by="operation")[0]["operations"] == {}


def test_a_settled_range_in_shape_b_ends_with_digits(api: Api, clock: Clock) -> None:
    today = clock.now.date()
    found = entries(
        api,
        api.keys["alpha-b"],
        start=str(today - timedelta(days=20)),
        end=str(today - timedelta(days=10)),
    )
    assert found[-1]["usage"] == "0"
    assert all(isinstance(e["usage"], int) for e in found[:-1])


def test_range_days_follow_new_york_across_the_spring_change(
    make_api: AppFactory, clock: Clock
) -> None:
    # New York moved from -05:00 to -04:00 on 10 March 2024 at 02:00 local time.
    api = make_api(timezone="America/New_York")
    key = api.keys["alpha-a"]
    for when, requests in (
        (datetime(2024, 3, 10, 4, 59, tzinfo=UTC), 1),  # 23:59 on 9 March, EST
        (datetime(2024, 3, 10, 5, 0, tzinfo=UTC), 2),  # midnight starting 10 March
        (datetime(2024, 3, 11, 3, 59, tzinfo=UTC), 3),  # 23:59 on 10 March, EDT: 23 h day
        (datetime(2024, 3, 11, 4, 0, tzinfo=UTC), 4),  # midnight starting 11 March
    ):
        clock.now = when
        for _ in range(requests):
            api.get(DETAILS, key, package="com.alpha.paid")
    clock.now = datetime(2024, 3, 20, 12, 0, tzinfo=UTC)
    found = entries(api, key, start="2024-03-09", end="2024-03-11", by="operation")
    assert [(e["date"], e["usage"], e["operations"]) for e in found] == [
        ("2024-03-09T00:00:00-05:00", 1, {"package/details": 1}),
        ("2024-03-10T00:00:00-05:00", 5, {"package/details": 5}),
        ("2024-03-11T00:00:00-04:00", 4, {"package/details": 4}),
    ]


def test_range_days_follow_paris_across_the_autumn_change(api: Api, clock: Clock) -> None:
    # Paris moved from +02:00 to +01:00 on 27 October 2024 at 03:00 local time: a 25 h day.
    key = api.keys["beta-paris"]
    for when in (
        datetime(2024, 10, 26, 21, 59, tzinfo=UTC),  # 23:59 on 26 October, CEST
        datetime(2024, 10, 26, 22, 0, tzinfo=UTC),  # midnight starting 27 October
        datetime(2024, 10, 27, 22, 59, tzinfo=UTC),  # 23:59 on 27 October, CET
        datetime(2024, 10, 27, 23, 0, tzinfo=UTC),  # midnight starting 28 October
    ):
        clock.now = when
        api.get(DETAILS, key, package="com.alpha.paid")
    clock.now = datetime(2024, 10, 28, 12, 0, tzinfo=UTC)
    found = entries(api, key, start="2024-10-26", end="2024-10-28")
    assert [(e["date"], e["usage"]) for e in found] == [
        ("2024-10-26T00:00:00+02:00", 1),
        ("2024-10-27T00:00:00+02:00", 2),
        ("2024-10-28T00:00:00+01:00", 2),  # one request then, and this one
    ]
    # The range's days are the zone's: "today" there is already 28 October.
    assert refusal(api, key, end="2024-10-29").startswith("end: ")


def test_the_end_may_be_today_in_the_zone_while_utc_is_still_yesterday(
    api: Api, clock: Clock
) -> None:
    # 23:30 UTC on 30 March 2024 is already 31 March in Paris.
    clock.now = datetime(2024, 3, 30, 23, 30, tzinfo=UTC)
    found = entries(api, api.keys["beta-paris"], start="2024-03-31", end="2024-03-31")
    assert [(e["date"], e["usage"]) for e in found] == [("2024-03-31T00:00:00+01:00", 1)]
    assert refusal(api, api.keys["beta-a"], end="2024-03-31").startswith("end: ")
    assert date(2024, 3, 31) > clock.now.date()
