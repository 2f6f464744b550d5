"""usage.json: decisions 2 (time) and 3 (usage) of docs/api.md."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

import pytest

from pkgcat.storage.admin import CatalogueAdmin
from tests.conftest import Api, AppFactory, Clock

USAGE = "/1.0/application/usage.json"
ISO_MIDNIGHT = re.compile(r"\d{4}-\d{2}-\d{2}T00:00:00[+-]\d{2}:\d{2}")
B_MIDNIGHT = re.compile(r"\d{2}-\d{2}-\d{4} 00:00:00")


def test_default_is_31_days_ascending_with_gaps_at_zero(api: Api, clock: Clock) -> None:
    body = api.get(USAGE, api.keys["alpha-a"]).json()
    assert body["code"] == 0
    entries = body["response"]
    assert len(entries) == 31
    days = [date.fromisoformat(e["date"][:10]) for e in entries]
    assert days == [clock.now.date() - timedelta(days=30 - n) for n in range(31)]
    assert all(ISO_MIDNIGHT.fullmatch(e["date"]) for e in entries)
    assert [e["usage"] for e in entries] == [0] * 30 + [1]


def test_days_gives_days_plus_one_entries(api: Api) -> None:
    for days in (1, 7, 365):
        entries = api.get(USAGE, api.keys["alpha-a"], days=days).json()["response"]
        assert len(entries) == days + 1


@pytest.mark.parametrize("days", ["0", "366", "-1", "abc", "1.5", "", "9999999999999"])
def test_days_out_of_range_or_not_integer_is_code_2_naming_days(api: Api, days: str) -> None:
    response = api.get(USAGE, api.keys["alpha-a"], days=days)
    assert response.status_code == 400
    assert response.json()["code"] == 2
    assert response.json()["response"].startswith("days: ")


def test_every_request_with_a_valid_key_counts_even_failed_ones(api: Api) -> None:
    key = api.keys["alpha-a"]
    api.get("/1.0/package/details.json", key, package="com.alpha.paid")
    api.get("/1.0/package/details.json", key, package="no.such.package")  # 404, still counted
    api.get(USAGE, key, days="bad")  # 400, still counted
    api.get(USAGE, "pkc_" + "x" * 40)  # unknown key: counted nowhere
    entries = api.get(USAGE, key, days=1).json()["response"]
    assert entries[-1]["usage"] == 4  # the three above and this one


def test_counts_are_per_application(api: Api) -> None:
    api.get(USAGE, api.keys["alpha-a"])
    api.get(USAGE, api.keys["alpha-a"])
    assert api.get(USAGE, api.keys["beta-a"], days=1).json()["response"][-1]["usage"] == 1


def test_counts_are_durable_across_app_restarts(make_api: AppFactory) -> None:
    first = make_api()
    for _ in range(3):
        first.get(USAGE, first.keys["alpha-a"], days=1)
    second = make_api()  # a new process would see the same file
    assert second.get(USAGE, second.keys["alpha-a"], days=1).json()["response"][-1]["usage"] == 4


def test_history_loaded_by_the_operator_is_reported(
    admin: CatalogueAdmin, api: Api, clock: Clock
) -> None:
    today = clock.now.date()
    admin.load(usage=[(1, today - timedelta(days=2), 70), (1, today - timedelta(days=40), 9)])
    entries = api.get(USAGE, api.keys["alpha-a"], days=3).json()["response"]
    assert [e["usage"] for e in entries] == [0, 70, 0, 1]
    longer = api.get(USAGE, api.keys["alpha-a"], days=40).json()["response"]
    assert longer[0]["usage"] == 9


def test_shape_b_dates_and_the_last_usage_as_digit_string(api: Api) -> None:
    entries = api.get(USAGE, api.keys["alpha-b"], days=5).json()["response"]
    assert all(B_MIDNIGHT.fullmatch(e["date"]) for e in entries)
    assert all(type(e["usage"]) is int for e in entries[:-1])
    assert entries[-1]["usage"] == "1"


def test_deployment_shape_b_and_application_override(make_api: AppFactory) -> None:
    api = make_api(shape="B")
    entries = api.get(USAGE, api.keys["alpha-a"], days=1).json()["response"]
    assert B_MIDNIGHT.fullmatch(entries[0]["date"])
    assert isinstance(entries[-1]["usage"], str)


def test_day_boundaries_follow_the_application_zone(api: Api, clock: Clock) -> None:
    # 23:30 UTC on 30 March 2024 is already 31 March in Paris (UTC+1 until 02:00 local).
    clock.now = datetime(2024, 3, 30, 23, 30, tzinfo=UTC)
    paris = api.get(USAGE, api.keys["beta-paris"], days=1).json()["response"]
    utc = api.get(USAGE, api.keys["beta-a"], days=1).json()["response"]
    assert paris[-1]["date"] == "2024-03-31T00:00:00+01:00"
    assert utc[-1]["date"] == "2024-03-30T00:00:00+00:00"


def test_offsets_follow_daylight_saving(api: Api, clock: Clock) -> None:
    # Paris moved from +01:00 to +02:00 on 31 March 2024 at 02:00 local time.
    clock.now = datetime(2024, 4, 2, 10, 0, tzinfo=UTC)
    entries = api.get(USAGE, api.keys["beta-paris"], days=4).json()["response"]
    assert [e["date"] for e in entries] == [
        "2024-03-29T00:00:00+01:00",
        "2024-03-30T00:00:00+01:00",
        "2024-03-31T00:00:00+01:00",
        "2024-04-01T00:00:00+02:00",
        "2024-04-02T00:00:00+02:00",
    ]


def test_deployment_time_zone_applies_to_applications_without_one(
    make_api: AppFactory, clock: Clock
) -> None:
    clock.now = datetime(2024, 7, 1, 2, 0, tzinfo=UTC)  # 1 July in UTC, 30 June in New York
    api = make_api(timezone="America/New_York")
    entries = api.get(USAGE, api.keys["alpha-a"], days=1).json()["response"]
    assert entries[-1]["date"] == "2024-06-30T00:00:00-04:00"
    paris = api.get(USAGE, api.keys["beta-paris"], days=1).json()["response"]
    assert paris[-1]["date"] == "2024-07-01T00:00:00+02:00"


def test_each_request_is_counted_on_its_own_day_where_midnight_is_skipped_or_repeated(
    make_api: AppFactory, clock: Clock
) -> None:
    # Santiago: on 8 September 2024 the clocks went from 00:00 to 01:00 (the day began at
    # 04:00 UTC), and on 7 April 2024 from 00:00 back to 23:00 (6 April lasted 25 hours).
    api = make_api(timezone="America/Santiago")
    key = api.keys["alpha-a"]

    def details_at(moment: str) -> None:
        clock.now = datetime.fromisoformat(moment)
        api.get("/1.0/package/details.json", key, package="com.alpha.paid")

    def days_at(moment: str) -> list[tuple[str, int]]:
        clock.now = datetime.fromisoformat(moment)
        entries = api.get(USAGE, key, days=1).json()["response"]
        return [(e["date"][:10], e["usage"]) for e in entries]

    details_at("2024-09-08T03:59:59+00:00")  # 23:59:59 on 7 September
    details_at("2024-09-08T04:00:00+00:00")  # 01:00 on 8 September
    details_at("2024-09-08T03:30:00+00:00")  # 7 September again: the day kept last is left
    assert days_at("2024-09-08T04:00:01+00:00") == [("2024-09-07", 2), ("2024-09-08", 2)]
    details_at("2024-04-07T03:30:00+00:00")  # 23:30 on 6 April, the second time that hour came
    details_at("2024-04-07T04:00:00+00:00")  # 00:00 on 7 April
    assert days_at("2024-04-07T03:59:59+00:00") == [("2024-04-05", 0), ("2024-04-06", 2)]


def test_a_day_the_clocks_went_back_across_midnight_is_not_one_interval(
    make_api: AppFactory, clock: Clock
) -> None:
    # St. John's, 7 November 2010: at 00:01 the clocks went back to 23:01, so 23:01 to 00:00
    # of 6 November came again after 7 November had begun.
    api = make_api(timezone="America/St_Johns")
    key = api.keys["alpha-a"]
    for moment in ("2010-11-07T02:30:30+00:00", "2010-11-07T03:00:00+00:00"):
        clock.now = datetime.fromisoformat(moment)  # 00:00:30 on 7 November, then 23:30 on 6
        api.get("/1.0/package/details.json", key, package="com.alpha.paid")
    clock.now = datetime.fromisoformat("2010-11-07T03:10:00+00:00")  # 23:40 on 6 November
    entries = api.get(USAGE, key, days=1).json()["response"]
    assert [(e["date"][:10], e["usage"]) for e in entries] == [
        ("2010-11-05", 0),
        ("2010-11-06", 2),
    ]


def test_requests_are_counted_on_the_application_zone_day(api: Api, clock: Clock) -> None:
    # 23:30 UTC on 30 March is 31 March in Paris: the count lands on each zone's own day.
    clock.now = datetime(2024, 3, 30, 23, 30, tzinfo=UTC)
    for _ in range(2):
        api.get("/1.0/package/details.json", api.keys["beta-paris"], package="com.alpha.paid")
    clock.now = datetime(2024, 3, 31, 9, 0, tzinfo=UTC)
    entries = api.get(USAGE, api.keys["beta-paris"], days=1).json()["response"]
    assert [(e["date"], e["usage"]) for e in entries] == [
        ("2024-03-30T00:00:00+01:00", 0),
        ("2024-03-31T00:00:00+01:00", 3),
    ]


def test_history_loaded_after_a_report_shows_on_the_next_one(
    admin: CatalogueAdmin, api: Api, clock: Clock
) -> None:
    key = api.keys["alpha-a"]
    assert api.get(USAGE, key, days=10).json()["response"][0]["usage"] == 0
    admin.load(usage=[(1, clock.now.date() - timedelta(days=10), 42)])
    assert api.get(USAGE, key, days=10).json()["response"][0]["usage"] == 42


def test_counts_stay_right_across_midnight(api: Api, clock: Clock) -> None:
    key = api.keys["alpha-a"]
    clock.now = datetime(2024, 3, 29, 23, 0, tzinfo=UTC)
    for _ in range(3):
        api.get(USAGE, key, days=5)
    clock.now = datetime(2024, 3, 30, 1, 0, tzinfo=UTC)
    api.get(USAGE, key, days=5)
    clock.now = datetime(2024, 3, 31, 1, 0, tzinfo=UTC)
    entries = api.get(USAGE, key, days=5).json()["response"]
    assert [(e["date"][:10], e["usage"]) for e in entries[-3:]] == [
        ("2024-03-29", 3),
        ("2024-03-30", 1),
        ("2024-03-31", 1),
    ]


def test_yesterday_is_read_live_just_after_midnight_then_kept(api: Api, clock: Clock) -> None:
    key, other = api.keys["alpha-a"], api.keys["alpha-b"]

    def last_two(days: int) -> list[tuple[str, int]]:
        entries = api.get(USAGE, key, days=days).json()["response"]
        return [(e["date"][:10], e["usage"]) for e in entries[-2:]]

    clock.now = datetime(2024, 3, 29, 23, 59, 50, tzinfo=UTC)
    for _ in range(3):
        api.get(USAGE, key, days=1)
    clock.now = datetime(2024, 3, 30, 0, 0, 10, tzinfo=UTC)
    assert last_two(1) == [("2024-03-29", 3), ("2024-03-30", 1)]
    assert last_two(30) == [("2024-03-29", 3), ("2024-03-30", 2)]
    clock.now = datetime(2024, 3, 30, 0, 6, tzinfo=UTC)  # yesterday is closed: kept from now on
    assert last_two(1) == [("2024-03-29", 3), ("2024-03-30", 3)]
    assert last_two(30) == [("2024-03-29", 3), ("2024-03-30", 4)]
    # Another application's requests today do not reach this report; its own do.
    api.get(USAGE, other, days=1)
    assert last_two(30) == [("2024-03-29", 3), ("2024-03-30", 5)]
