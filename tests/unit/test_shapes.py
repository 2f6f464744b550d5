"""The shapes of models.py on their own: the rules of each shape, for any value."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st

from pkgcat.domain import Purchase, Shape, UsageDay
from pkgcat.models import buyers_body, usage_body
from pkgcat.services import BuyersPage

UTC_ZONE = ZoneInfo("UTC")
SHAPES: tuple[Shape, ...] = ("A", "B")


@given(st.lists(st.integers(min_value=0, max_value=10**12), min_size=1, max_size=40))
def test_shape_b_turns_only_the_last_count_into_digits(counts: list[int]) -> None:
    start = date(2024, 1, 1)
    days = [UsageDay(day=start + timedelta(days=n), requests=c) for n, c in enumerate(counts)]
    entries = usage_body(days, "B", UTC_ZONE)
    assert [e["usage"] for e in entries[:-1]] == counts[:-1]
    assert entries[-1]["usage"] == str(counts[-1])
    assert [e["usage"] for e in usage_body(days, "A", UTC_ZONE)] == counts


AMOUNTS = st.builds(
    lambda digits, exponent: Decimal(digits).scaleb(exponent),
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=-8, max_value=6),
)
"""Amounts in every form a Decimal can take: ``5``, ``1E+3``, ``0.5``, ``1.2345``, ``0E-8``."""


@given(AMOUNTS, AMOUNTS)
def test_amounts_are_plain_decimals_with_two_places_at_least(
    total: Decimal, commission: Decimal
) -> None:
    """docs/api.md, numbers as strings: no exponent, a point, two decimals or more, exact."""
    purchase = Purchase(
        nickname="n",
        status="Completed",
        total=total,
        commission=commission,
        currency="USD",
        purchased_at=datetime(2024, 1, 1, tzinfo=UTC),
        txn_id="T",
        profile_url="https://x.example/",
        allowed_for="package",
        payment_platform="paypal",
    )
    for shape in SHAPES:
        (typed,) = buyers_body(BuyersPage(0, 25, 1, 1, (purchase,)), shape, UTC_ZONE)["buyers"]
        buyer: dict[str, str] = dict(typed)  # type: ignore[arg-type]  # read by name below
        for field, amount in (("total", total), ("commission", commission)):
            assert re.fullmatch(r"\d+\.\d{2,}", buyer[field]), (field, amount, buyer[field])
            assert Decimal(buyer[field]) == amount


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
