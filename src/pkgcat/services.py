"""The use cases behind the three operations: no HTTP, no SQL.

A request first goes through :meth:`CatalogueService.admit` (the key, the
rate limit and the durable count), then through one operation. Each method raises a
:mod:`pkgcat.errors` error for what the caller did wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from pkgcat import keys
from pkgcat.domain import BuyersPage, Caller, KeyRecord, Package, RateDecision, Shape, UsageDay
from pkgcat.errors import (
    InvalidArgument,
    PackageNotFound,
    PermissionDenied,
    RateLimited,
    Unauthenticated,
)
from pkgcat.storage.interfaces import CatalogueReader, RateLimiter, UsageCounter

Clock = Callable[[], datetime]

DAYS_DEFAULT, DAYS_MAX = 30, 365
SETTLE_AFTER = 300.0
"""Seconds after midnight by which every count of the day before has been committed.

A count waits at most for the write lock on SQLite (10 s), or on PostgreSQL
for the batch in flight and then its own (two statements of at most 10 s
each, plus the pool); five minutes also leaves room for clocks of several
hosts that differ by a minute or two."""
LIMIT_DEFAULT, LIMIT_MAX = 25, 100
BLANK = " \t\n\r\x0b\x0c"
"""What is trimmed from both ends of a package identifier: ASCII white space, and nothing else.

The OpenAPI document states the same set (a package must hold another character)."""
_REVOKED = "secret_key: unknown or revoked secret key"
UNNAMED = "-"
"""The operation a request is counted under when its caller names none."""


def utc_now() -> datetime:
    return datetime.now(UTC)


@lru_cache(maxsize=64)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def package_identifier(raw: str) -> str:
    """``raw`` without the white space around it; code 2 when nothing is left."""
    package_id = raw.strip(BLANK)
    if not package_id:
        raise InvalidArgument("package", "missing; give a package identifier")
    return package_id


def buyers_window(limit: int, page: int) -> tuple[int, int]:
    """A buyers page's size and number as applied: a size above the maximum is clamped."""
    if limit < 1:
        raise InvalidArgument("limit", f"must be at least 1, got {limit}")
    if page < 1:
        raise InvalidArgument("page", f"must be at least 1, got {page}")
    return min(limit, LIMIT_MAX), page


def _today(now: datetime, timezone: str) -> date:
    """The calendar day of ``now`` in ``timezone``."""
    return now.astimezone(_zone(timezone)).date()


@lru_cache(maxsize=4096)
def _midnight(day: date, timezone: str) -> float:
    """The POSIX time at which ``day`` starts in ``timezone``."""
    return datetime.combine(day, time(), _zone(timezone)).timestamp()


@lru_cache(maxsize=1024)
def _days_until(last: date, days: int) -> tuple[date, ...]:
    """``last`` and the ``days`` days before it, oldest first (the same few recur all day).

    At most 1,024 calendars of at most 366 dates (about 40 bytes each): under
    15 MB even if every one held a year (a day's 365 values of ``days`` fit)."""
    return tuple(last - timedelta(days=days - n) for n in range(days + 1))


class CatalogueService:
    """Authentication, rate limit, usage counting and the three read operations."""

    def __init__(
        self,
        catalogue: CatalogueReader,
        counter: UsageCounter,
        limiter: RateLimiter,
        *,
        default_shape: Shape,
        default_timezone: str,
        clock: Clock = utc_now,
    ) -> None:
        self._catalogue = catalogue
        self._counter = counter
        self._limiter = limiter
        self._default_shape = default_shape
        self._default_timezone = default_timezone
        self._clock = clock

    async def admit(
        self, secret_key: str | None, operation: str = UNNAMED
    ) -> tuple[Caller, RateDecision]:
        """Authenticate a request, spend one request of its limit and count it under ``operation``.

        Raises :class:`Unauthenticated` or :class:`RateLimited`; the count is
        durable when this returns. The key is checked against what this
        process last knew of the catalogue; the commit of the count then has
        the last word: it counts only a live key (SQLite) of an existing
        application, and a dropped count is refused. When the commit read a
        newer generation than the key was checked in (SQLite learns of
        changes there), the caller is read again for its shape and zone.
        """
        caller = await self.authenticate(secret_key)
        decision = await self._limiter.hit(caller.application.id)
        if not decision.allowed:
            # Nothing is committed to learn a change from: a key revoked meanwhile is 401, not 429.
            if await self._catalogue.latest_generation() != caller.generation:
                await self._key(caller.key.key_hash)
            raise RateLimited(decision, caller.application.id)
        counted = await self._counter.record(
            caller.application.id,
            caller.today,
            caller.key.id,
            int(caller.now.timestamp()),
            operation,
        )
        if counted.requests == 0:  # the key or its application had gone at the commit
            raise Unauthenticated(_REVOKED)
        if counted.generation >= 0 and counted.generation != caller.generation:
            caller = await self._refresh(caller, await self._catalogue.generation())
        return caller._replace(requests_today=counted.requests), decision

    async def authenticate(self, secret_key: str | None) -> Caller:
        """The caller a key belongs to; :class:`Unauthenticated` for a missing, unknown or revoked key."""
        if not secret_key:
            raise Unauthenticated("secret_key: missing; pass it as ?secret_key= or a Bearer token")
        if not keys.is_well_formed(secret_key):
            raise Unauthenticated("secret_key: not a valid secret key")
        generation = await self._catalogue.generation()  # first: caches are checked against it
        record = await self._key(keys.hash_key(secret_key))
        app = record.application
        timezone = app.timezone or self._default_timezone
        now = self._clock()
        return Caller(
            app,
            record,
            app.shape or self._default_shape,
            timezone,
            now,
            # Read once per request: the day it is counted on is the day it reports.
            _today(now, timezone),
            generation,
        )

    async def _key(self, key_hash: str) -> KeyRecord:
        # Looked up by its hash: a timing difference could only tell an attacker about
        # hashes, never about keys; the stored hash is then compared in constant time.
        record = await self._catalogue.find_key(key_hash)
        if record is None or not keys.same_hash(record.key_hash, key_hash):
            raise Unauthenticated(_REVOKED)
        return record

    async def _refresh(self, caller: Caller, generation: int) -> Caller:
        """``caller`` read again after a change, for its shape and zone.

        Its count is committed, so its key was live then: a revocation that
        came after the commit does not undo the request.
        """
        record = await self._catalogue.find_key(caller.key.key_hash)
        if record is None:
            return caller
        # The request keeps the day it was counted on, in the zone it was counted in.
        app = record.application
        return caller._replace(
            application=app,
            key=record,
            shape=app.shape or self._default_shape,
            generation=generation,
        )

    def usage_calendar(self, caller: Caller, days: int = DAYS_DEFAULT) -> tuple[date, ...]:
        """The days a usage report of ``days`` covers: today and the ``days`` before it, oldest first."""
        if not 1 <= days <= DAYS_MAX:
            raise InvalidArgument("days", f"must be between 1 and {DAYS_MAX}, got {days}")
        return _days_until(caller.today, days)

    def live_days(self, caller: Caller) -> int:
        """How many of a report's last days can still gain requests: 1 (today) or 2.

        A request is counted on the day it arrived, so yesterday is closed once
        the counts still in flight at midnight have landed: for the first
        :data:`SETTLE_AFTER` seconds of today it is read like today. The days
        before change only when the operator loads statistics, which moves the
        catalogue generation, so a rendering of them can be kept for it.
        """
        since_midnight = caller.now.timestamp() - _midnight(caller.today, caller.timezone)
        return 2 if since_midnight < SETTLE_AFTER else 1

    def usage_today(self, caller: Caller) -> UsageDay:
        """Today's requests as the caller's own count left them (no read needed)."""
        return UsageDay(caller.today, caller.requests_today)

    async def usage_on(self, caller: Caller, calendar: Sequence[date]) -> list[UsageDay]:
        """Requests on each of ``calendar``'s consecutive days (oldest first), 0 for none."""
        if not calendar:
            return []
        counts = await self._counter.usage(caller.application.id, calendar[0], calendar[-1])
        return [UsageDay(day, counts.get(day, 0)) for day in calendar]

    async def package_details(self, caller: Caller, package_id: str) -> Package:
        """Any online package; an offline one only for applications of its own source."""
        package_id = package_identifier(package_id)
        package = await self._catalogue.package(package_id)
        if package is None or (
            not package.online and package.source.id != caller.application.source_id
        ):
            raise PackageNotFound(f"package: no package {package_id!r} in this catalogue")
        return package

    async def buyers(
        self, caller: Caller, package_id: str, limit: int = LIMIT_DEFAULT, page: int = 1
    ) -> BuyersPage:
        """One page of a paid package's buyers, for its own source only.

        ``limit`` above the maximum is clamped (the page says what was applied);
        a page past the end is empty and still carries the true total.
        """
        limit, page = buyers_window(limit, page)
        package = await self.package_details(caller, package_id)
        if package.source.id != caller.application.source_id:
            raise PermissionDenied(
                f"package: {package_id!r} belongs to another source; "
                "only its own source may read its buyers"
            )
        if package.is_free:
            raise InvalidArgument("package", f"{package_id!r} is free: it has no buyers")
        start = (page - 1) * limit
        found = await self._catalogue.buyers(package.id, package.source.id, limit, start)
        return BuyersPage(
            start=start, limit=limit, total=found.total, page=page, buyers=tuple(found.purchases)
        )
