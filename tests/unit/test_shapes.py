"""shapes.py on its own: the rules of each shape, for any value."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st

from pkgcat.domain import BuyersPage, Purchase, UsageDay
from pkgcat.shapes import buyers_body, usage_body

UTC_ZONE = ZoneInfo("UTC")


@given(st.lists(st.integers(min_value=0, max_value=10**12), min_size=1, max_size=40))
def test_shape_b_turns_only_the_last_count_into_digits(counts: list[int]) -> None:
    start = date(2024, 1, 1)
    days = [UsageDay(day=start + timedelta(days=n), requests=c) for n, c in enumerate(counts)]
    entries = usage_body(days, "B", UTC_ZONE)
    assert [e["usage"] for e in entries[:-1]] == counts[:-1]
    assert entries[-1]["usage"] == str(counts[-1])
    assert [e["usage"] for e in usage_body(days, "A", UTC_ZONE)] == counts


@given(st.decimals(min_value=0, max_value=10**6, places=2, allow_nan=False, allow_infinity=False))
def test_amounts_never_use_an_exponent(amount: Decimal) -> None:
    purchase = Purchase(
        nickname="n",
        status="Completed",
        total=amount,
        commission=amount / 10,
        currency="USD",
        purchased_at=datetime(2024, 1, 1, tzinfo=UTC),
        txn_id="T",
        profile_url="https://x.example/",
        allowed_for="package",
        payment_platform="paypal",
    )
    body = buyers_body(BuyersPage(0, 25, 1, 1, (purchase,)), "A", UTC_ZONE)
    total = body["buyers"][0]["total"]
    assert "E" not in total
    assert "e" not in total
    assert Decimal(total) == amount


def test_midnight_offsets_in_a_zone_with_daylight_saving() -> None:
    paris = ZoneInfo("Europe/Paris")
    days = [UsageDay(date(2024, 10, 26), 1), UsageDay(date(2024, 10, 27), 2)]
    assert [e["date"] for e in usage_body(days, "A", paris)] == [
        "2024-10-26T00:00:00+02:00",
        "2024-10-27T00:00:00+02:00",
    ]
    assert [e["date"] for e in usage_body([UsageDay(date(2024, 10, 28), 0)], "A", paris)] == [
        "2024-10-28T00:00:00+01:00"
    ]
