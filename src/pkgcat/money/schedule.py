"""The payout schedule: the hold, the payout dates and the least amount paid out.

As the marketplaces sellers know do it (Havoc's sellers' documentation: proceeds held 30
days "to account for chargebacks, fraud, and refunds", payouts on the 1st and the 15th,
only above $20 or the seller's own higher threshold): each store sale stays pending for
``PKGCAT_PAYOUT_HOLD_DAYS``, then is available; on each date of ``PKGCAT_PAYOUT_DAYS`` the
available balance of each source and currency is paid out when it reaches the minimum.

A payout belongs to a *period*, the latest payout date on or before the day it is made
(UTC): one payout per source, currency and period, so a date the scheduler missed (no
server ran, the account was not ready yet) is caught up at its next run, and a balance
paid or tried on a date waits for the next one.
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from pkgcat.config import Settings
from pkgcat.money.amounts import to_minor

DAY = 86400


@dataclass(frozen=True, slots=True)
class Schedule:
    hold_days: int = 30
    days: tuple[int, ...] | None = (1, 15)
    """Days of the month payouts are made on; None: every day."""
    minimums: Mapping[str, Decimal] = field(default_factory=lambda: {"USD": Decimal(20)})
    """The least payout per currency, in its major units; a currency not named: above zero."""

    @classmethod
    def of(cls, settings: Settings) -> Schedule:
        days = None
        if settings.payout_days != "*":
            days = tuple(int(day) for day in settings.payout_days.split(","))
        minimums = {}
        for part in settings.payout_minimum.split(","):
            if part.strip():
                amount, currency = part.split()
                minimums[currency] = Decimal(amount)
        return cls(settings.payout_hold_days, days, minimums)

    @property
    def hold_seconds(self) -> int:
        return self.hold_days * DAY

    def minimum(self, currency: str, threshold: int | None = None) -> int:
        """The least payout in minor units: the deployment's, or the source's higher one;
        at least one minor unit (nothing is paid out of a balance of zero or less)."""
        least = max(to_minor(self.minimums.get(currency, Decimal(0)), currency), 1)
        return max(least, threshold or 0)

    def period(self, today: date) -> date:
        """The latest payout date on or before ``today``."""
        if self.days is None:
            return today
        earlier = [day for day in self.days if day <= today.day]
        if earlier:
            return today.replace(day=max(earlier))
        last_month = today.replace(day=1) - timedelta(days=1)
        return last_month.replace(day=max(self.days))

    def next_after(self, today: date) -> date:
        """The first payout date after ``today``."""
        if self.days is None:
            return today + timedelta(days=1)
        later = [day for day in self.days if day > today.day]
        if later:
            return today.replace(day=min(later))
        days_in_month = calendar.monthrange(today.year, today.month)[1]
        return (today.replace(day=days_in_month) + timedelta(days=1)).replace(day=min(self.days))


def utc_day(at: int) -> date:
    return datetime.fromtimestamp(at, UTC).date()


def day_start(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())
