"""The use cases behind the operations, and what each answers: no HTTP, no SQL.

A request first goes through :meth:`CatalogueService.admit` (the key, the
rate limit and the durable count), then through one operation. Each method raises a
:mod:`pkgcat.errors` error for what the caller did wrong.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from pkgcat import keys
from pkgcat.cursors import Cursors, key_position, text_position
from pkgcat.domain import (
    Caller,
    Claimant,
    KeyKind,
    KeyRecord,
    KeyScope,
    Licence,
    Package,
    Purchase,
    RateDecision,
    Sale,
    SalesTotal,
    Shape,
    UsageDay,
    scopes_text,
)
from pkgcat.errors import (
    InvalidArgument,
    KeyKindRefused,
    KeyMissing,
    OutsideKeyPackage,
    PackageNotFound,
    PermissionDenied,
    RateLimited,
    ScopeMissing,
    Unauthenticated,
)
from pkgcat.storage.interfaces import RateLimiter, UsageCounter
from pkgcat.storage.reads import Catalogue

Clock = Callable[[], datetime]

DAYS_DEFAULT, DAYS_MAX = 30, 365
RANGE_MAX = 365
"""The most days a ``start``/``end`` range may hold, both ends included."""
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
_REVOKED = {
    "secret": "secret_key: unknown or revoked secret key",
    "public": "public_key: unknown or revoked public key",
}
SALES_DAYS_DEFAULT = 30
"""Days a sales ledger covers when ``start`` is not given (``end`` included)."""
STATUSES = {"completed": "Completed", "refunded": "Refunded", "chargeback": "Chargeback"}
"""Purchase statuses as the table's ``status`` choices name them, and as they are stored."""
CURSOR_KEY = "cursor_key"
"""The name of the per-database secret that signs cursors (migration 0005)."""
FIRST_DAY = date(1970, 1, 1)
"""The first day a range may hold: times are stored as unix seconds, and days before it
would reach the calendar's start once moved to a zone (year 1 has no day before it)."""
UNNAMED = "-"
"""The operation a request is counted under when its caller names none."""


def utc_now() -> datetime:
    return datetime.now(UTC)


@lru_cache(maxsize=64)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def day_range(
    today: date, start: date | None, end: date | None, *, default_days: int, max_days: int
) -> tuple[date, date]:
    """The days from ``start`` to ``end`` inclusive (days in the caller's zone).

    ``end`` defaults to ``today``, ``start`` to ``default_days`` days before
    ``end`` (or :data:`FIRST_DAY`, if that is later). Code 2 naming the parameter
    when either is before :data:`FIRST_DAY`, ``end`` is after ``today``, ``start``
    after ``end``, or the range holds more than ``max_days`` days.
    """
    last = today if end is None else end
    first = start
    if first is not None and first < FIRST_DAY:
        raise InvalidArgument("start", f"must not be before {FIRST_DAY.isoformat()}")
    if last < FIRST_DAY:
        raise InvalidArgument("end", f"must not be before {FIRST_DAY.isoformat()}")
    if last > today:
        raise InvalidArgument("end", f"must not be after today ({today.isoformat()})")
    if first is None:
        first = max(last - timedelta(days=default_days), FIRST_DAY)
    if first > last:
        raise InvalidArgument("start", f"must not be after end ({last.isoformat()})")
    if (last - first).days + 1 > max_days:
        raise InvalidArgument(
            "start", f"the range may hold at most {max_days} days, got {(last - first).days + 1}"
        )
    return first, last


_CURRENT_DAYS: dict[str, tuple[float, float, date]] = {}
"""Each zone's day last asked for, with the POSIX times it starts and ends at: a request
finds its day by two comparisons instead of a conversion (one entry per zone, and the
zones are the IANA names the settings and the applications validate). Only a day at one
UTC offset from its start to its end is kept: a day the clocks change in may not be one
interval (clocks set back across midnight, as St. John's did at 00:01, make part of it
the day before again), and its end may not be the next day's start."""


def _today(now: datetime, timezone: str) -> date:
    """The calendar day of ``now`` in ``timezone``."""
    stamp = now.timestamp()
    kept = _CURRENT_DAYS.get(timezone)
    if kept is not None and kept[0] <= stamp < kept[1]:
        return kept[2]
    zone = _zone(timezone)
    day = now.astimezone(zone).date()
    starts, ends = _midnight(day, timezone), _midnight(day + timedelta(days=1), timezone)
    offset = datetime.fromtimestamp(starts, zone).utcoffset()
    if starts <= stamp < ends and offset == datetime.fromtimestamp(ends - 1, zone).utcoffset():
        _CURRENT_DAYS[timezone] = (starts, ends, day)
    return day


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


# --- what the use cases answer ------------------------------------------------------------------
# Built here from what storage reads, rendered by pkgcat.models. A record that storage itself
# builds, or that several operations share, is in pkgcat.domain.


@dataclass(frozen=True, slots=True)
class BuyersPage:
    """A page of buyers: ``start`` is ``(page - 1) * limit``."""

    start: int
    limit: int
    total: int
    page: int
    buyers: tuple[Purchase, ...]


@dataclass(frozen=True, slots=True)
class PackagesPage:
    """A page of a source's own packages; ``cursor`` resumes after it (``None``: the last page)."""

    packages: tuple[Package, ...]
    limit: int
    cursor: str | None


@dataclass(frozen=True, slots=True)
class DownloadsReport:
    """Whole downloads of one package per UTC day, oldest first, days without any at 0."""

    package: str
    days: tuple[UsageDay, ...]
    """Each day and its downloads (a ``UsageDay``: a day and a count)."""

    @property
    def total(self) -> int:
        return sum(day.requests for day in self.days)


@dataclass(frozen=True, slots=True)
class SalesPage:
    """A page of the sales ledger between two days, with the totals of the whole ledger."""

    start: date
    end: date
    sales: tuple[Sale, ...]
    totals: tuple[SalesTotal, ...]
    limit: int
    cursor: str | None


@dataclass(frozen=True, slots=True)
class BuyersWalk:
    """A page of buyers walked with cursors: ``total`` counts them all, as a page does."""

    limit: int
    total: int
    buyers: tuple[Purchase, ...]
    cursor: str | None


@dataclass(frozen=True, slots=True)
class Check:
    """Whether a buyer or a device holds a package, and every reason it does."""

    package: str
    licence: Licence
    udid: str | None = None
    """The device asked about, when the check named one."""

    @property
    def owned(self) -> bool:
        return self.licence.owned


class CatalogueService:
    """Authentication, rate limit, usage counting and the read operations."""

    def __init__(
        self,
        catalogue: Catalogue,
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
        self.counted_downloads: Callable[[str], Awaitable[int]] = counter.downloads_total
        """The whole downloads the served repository counted of a package, every day (the
        counter's own method: details awaits it on every request, and a call less counts)."""
        self._cursors: Cursors | None = None

    async def admit(
        self, secret_key: str | None, operation: str = UNNAMED, cutoff: float | None = None
    ) -> tuple[Caller, RateDecision]:
        """Authenticate a request, spend one request of its limit and count it under ``operation``.

        Raises :class:`Unauthenticated` or :class:`RateLimited`; the count is
        durable when this returns. The key is checked against what this
        process last knew of the catalogue; the commit of the count then has
        the last word: it counts only a live key (SQLite) of an existing
        application, and a dropped count is refused. When the commit read a
        newer generation than the key was checked in (SQLite learns of
        changes there), the caller is read again for its shape and zone.

        ``cutoff`` (POSIX seconds): a commit that would reach the database after it
        counts nothing and fails (the request's deadline is near: it will be 503).
        """
        caller = await self.authenticate(secret_key)
        decision = await self._limiter.hit(caller.application.id)
        if not decision.allowed:
            raise await self.refusal(caller, RateLimited(decision, caller.application.id))
        return await self.count(caller, operation, cutoff), decision

    async def refusal(self, caller: Caller, error: RateLimited) -> RateLimited:
        """``error`` for a caller its limit refused, unless its key was revoked meanwhile:
        then :class:`Unauthenticated` is raised, as its next request would get."""
        # Nothing is committed to learn a change from: a key revoked meanwhile is 401, not 429.
        if await self._catalogue.latest_generation() != caller.generation:
            await self._key(caller.key.key_hash, caller.key.kind)
        return error

    async def count(
        self, caller: Caller, operation: str = UNNAMED, cutoff: float | None = None
    ) -> Caller:
        """``caller`` once its request is counted under ``operation``, durably (see :meth:`admit`)."""
        counted = await self._counter.record(
            caller.application.id,
            caller.today,
            caller.key.id,
            int(caller.now.timestamp()),
            operation,
            cutoff,
        )
        if counted.requests == 0:  # the key or its application had gone at the commit
            raise Unauthenticated(_REVOKED[caller.key.kind])
        if counted.generation >= 0 and counted.generation != caller.generation:
            caller = await self._refresh(caller, await self._catalogue.generation())
        # Built field by field: NamedTuple._replace took twice as long, on every request.
        app, record, shape, zone, now, today, generation, _ = caller
        requests = counted.requests
        return Caller(app, record, shape, zone, now, today, generation, requests)

    def retract(self, caller: Caller, operation: str = UNNAMED) -> None:
        """Take back the count :meth:`admit` committed for a request that is answered 503 after all.

        A 503 says "not counted, retry": the count leaves with the next commit of counts.
        """
        self._counter.retract(caller.application.id, caller.today, operation)

    async def authenticate(self, secret_key: str | None) -> Caller:
        """The caller a secret key belongs to; :class:`Unauthenticated` for a missing, unknown
        or revoked key, :class:`KeyKindRefused` for a live public key (it may only check
        devices: :mod:`pkgcat.licences`)."""
        if not secret_key:
            raise KeyMissing("secret_key: missing; pass it as ?secret_key= or a Bearer token")
        if not keys.is_well_formed(secret_key):
            if keys.is_public(secret_key):
                await self.authenticate_public(secret_key)  # Unauthenticated unless live
                raise KeyKindRefused(
                    "secret_key: this is a public key, which may only check a device's "
                    "licence (package/check with udid); this operation needs a secret key"
                )
            raise Unauthenticated("secret_key: not a valid secret key")
        return await self._caller(secret_key, "secret")

    async def authenticate_public(self, public_key: str | None) -> Caller:
        """The caller a public key belongs to; :class:`Unauthenticated` for a missing, unknown
        or revoked key (a secret key is no public key: it is admitted as every operation
        admits it, :meth:`admit`)."""
        if not public_key:
            raise KeyMissing("public_key: missing; pass it as ?public_key= or a Bearer token")
        if not keys.is_public(public_key):
            raise Unauthenticated("public_key: not a valid public key")
        return await self._caller(public_key, "public")

    async def _caller(self, key: str, kind: KeyKind) -> Caller:
        generation = await self._catalogue.generation()  # first: caches are checked against it
        record = await self._key(keys.hash_key(key), kind)
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

    async def _key(self, key_hash: str, kind: KeyKind = "secret") -> KeyRecord:
        # Looked up by its hash: a timing difference could only tell an attacker about
        # hashes, never about keys; the stored hash is then compared in constant time.
        record = await self._catalogue.find_key(key_hash)
        if record is None or not keys.same_hash(record.key_hash, key_hash) or record.kind != kind:
            raise Unauthenticated(_REVOKED[kind])
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
        return _days_until(caller.today, days)

    def usage_range(self, caller: Caller, start: date | None, end: date | None) -> tuple[date, ...]:
        """The days a usage report from ``start`` to ``end`` covers, oldest first.

        Either may be left out: ``end`` is then today, ``start`` the day that
        makes the report as long as the default ``days`` one.
        """
        first, last = day_range(
            caller.today, start, end, default_days=DAYS_DEFAULT, max_days=RANGE_MAX
        )
        return _days_until(last, (last - first).days)

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
        counts = await self._catalogue.usage(caller.application.id, calendar[0], calendar[-1])
        return [UsageDay(day, counts.get(day, 0)) for day in calendar]

    async def usage_operations_on(
        self, caller: Caller, calendar: Sequence[date]
    ) -> dict[date, dict[str, int]]:
        """Requests on each of ``calendar``'s days by operation (days and operations with none absent)."""
        if not calendar:
            return {}
        return await self._catalogue.usage_operations(
            caller.application.id, calendar[0], calendar[-1]
        )

    async def package_details(self, caller: Caller, package_id: str) -> Package:
        """Any online package; an offline one only for applications of its own source."""
        package = await self._catalogue.package(package_id)
        if package is None or (
            not package.online and package.source.id != caller.application.source_id
        ):
            raise PackageNotFound(f"package: no package {package_id!r} in this catalogue")
        return package

    @staticmethod
    def require_scope(caller: Caller, scope: KeyScope, operation: str) -> None:
        """:class:`ScopeMissing` unless the caller's key holds ``scope``."""
        if scope not in caller.key.scopes:
            raise ScopeMissing(
                f"secret_key: this key may not call {operation}, which needs the scope "
                f"{scope!r} (the key has {scopes_text(caller.key.scopes)}); the operator "
                f"grants it with 'pkgcat key create --scope {scope}'"
            )

    async def published_details(self, package_id: str) -> Package:
        """A package just written by this worker, read from the database itself: the change
        may not have come back through the change feed yet (a notification on PostgreSQL)."""
        package = await self._catalogue.package(package_id, fresh=True)
        if package is None:
            raise PackageNotFound(f"package: no package {package_id!r} in this catalogue")
        return package

    async def buyers(
        self, caller: Caller, package_id: str, limit: int = LIMIT_DEFAULT, page: int = 1
    ) -> BuyersPage:
        """One page of a paid package's buyers, for its own source only.

        A page past the end is empty and still carries the true total.
        """
        package = await self._paid_own_package(caller, package_id)
        start = (page - 1) * limit
        found = await self._catalogue.buyers(package.id, package.source.id, limit, start)
        return BuyersPage(
            start=start, limit=limit, total=found.total, page=page, buyers=tuple(found.purchases)
        )

    @staticmethod
    def with_downloads(package: Package, counted: int) -> Package:
        """``package`` as details shows it: its imported downloads plus those counted here."""
        if not counted:
            return package
        return replace(package, total_download=package.total_download + counted)

    async def downloads(
        self, caller: Caller, package_id: str, calendar: Sequence[date]
    ) -> DownloadsReport:
        """One of the caller's packages' whole downloads on each of ``calendar``'s days."""
        package = await self.own_package(caller, package_id, "its downloads")
        counts = await self._catalogue.downloads(package.package, calendar[0], calendar[-1])
        return DownloadsReport(
            package.package, tuple(UsageDay(day, counts.get(day, 0)) for day in calendar)
        )

    def downloads_calendar(
        self, caller: Caller, days: int | None, start: date | None, end: date | None
    ) -> tuple[date, ...]:
        """The UTC days a downloads report covers: the last ``days`` and today, or ``start``
        to ``end`` (the usage report's rules, on UTC days: a download has no time zone)."""
        today = caller.now.astimezone(UTC).date()
        if days is None:
            first, last = day_range(
                today, start, end, default_days=DAYS_DEFAULT, max_days=RANGE_MAX
            )
            return _days_until(last, (last - first).days)
        return _days_until(today, days)

    async def own_package(self, caller: Caller, package_id: str, what: str) -> Package:
        """One of the caller's own packages: code 8 when unknown (or offline elsewhere), else 12.

        A key made for one package answers for it alone (code 12 for any other, before any
        read: such a key learns nothing of other identifiers)."""
        only = caller.key.package
        if only is not None and package_id != only:
            raise OutsideKeyPackage(f"package: this key answers only for {only!r}")
        package = await self.package_details(caller, package_id)
        if package.source.id != caller.application.source_id:
            raise PermissionDenied(
                f"package: {package_id!r} belongs to another source; "
                f"only its own source may read {what}"
            )
        return package

    async def _paid_own_package(self, caller: Caller, package_id: str) -> Package:
        package = await self.own_package(caller, package_id, "its buyers")
        if package.is_free:
            raise InvalidArgument("package", f"{package_id!r} is free: it has no buyers")
        return package

    async def cursors(self) -> Cursors:
        """The cursors of this database, keyed once with its ``cursor_key`` secret."""
        if self._cursors is None:
            value = await self._catalogue.secret(CURSOR_KEY)
            if value is None:
                raise RuntimeError("no cursor key in the database: run `pkgcat database upgrade`")
            self._cursors = Cursors.from_hex(value)
        return self._cursors

    async def buyers_walk(
        self, caller: Caller, package_id: str, limit: int, cursor: str
    ) -> BuyersWalk:
        """Buyers in cursor mode: right after the position ``cursor`` holds ("" starts anew).

        Keyset positions: buyers that arrive during a walk never shift it.
        """
        cursors = await self.cursors()
        filters = (("package", package_id),)
        source_id = caller.application.source_id
        after = (
            key_position(cursors.read(cursor, "package/buyers", source_id, filters))
            if cursor
            else None
        )
        package = await self._paid_own_package(caller, package_id)
        found = await self._catalogue.buyers_after(package.id, source_id, limit + 1, after)
        more = len(found.purchases) > limit
        buyers = tuple(found.purchases[:limit])
        following = None
        if more:
            last = buyers[-1]
            position = (int(last.purchased_at.timestamp()), last.txn_id)
            following = cursors.make("package/buyers", source_id, filters, position)
        return BuyersWalk(limit, found.total, buyers, following)

    async def source_packages(
        self,
        caller: Caller,
        *,
        paid: bool | None = None,
        online: bool | None = None,
        limit: int = LIMIT_DEFAULT,
        cursor: str | None = None,
    ) -> PackagesPage:
        """The caller's own source's packages (online or not) by identifier, one page."""
        cursors = await self.cursors()
        filters = (("paid", _flag(paid)), ("online", _flag(online)))
        source_id = caller.application.source_id
        after = (
            text_position(cursors.read(cursor, "source/packages", source_id, filters))
            if cursor
            else None
        )
        found = await self._catalogue.source_packages(
            source_id, limit + 1, after, paid=paid, online=online
        )
        packages = tuple(found[:limit])
        following = None
        if len(found) > limit:
            position = (packages[-1].package,)
            following = cursors.make("source/packages", source_id, filters, position)
        return PackagesPage(packages, limit, following)

    async def check(
        self,
        caller: Caller,
        package_id: str,
        by: str,
        value: str,
        model: str | None = None,
    ) -> Check:
        """Whether a buyer, known ``by`` nickname, account or udid (a device, of ``model`` if
        given), holds a package of the caller's source.

        Held: through a completed purchase of the package or of its whole source (the
        earliest answers; refunds and chargebacks never count), or, for a device, by being
        on the package's whitelist: one statement, whatever the answer
        (:mod:`pkgcat.storage.licences`).
        """
        package = await self.own_package(caller, package_id, "who owns it")
        if by == "udid":
            claimant = Claimant.device(value, model)
        else:
            claimant = Claimant(nickname=value) if by == "nickname" else Claimant(account=value)
        licence = await self._catalogue.licence(package.source.id, package.id, claimant)
        return Check(package.package, licence, value if by == "udid" else None)

    def sales_days(self, caller: Caller, start: date | None, end: date | None) -> tuple[date, date]:
        """The days a sales ledger covers: ``start`` to ``end``, by default the last 30 days."""
        return day_range(
            caller.today, start, end, default_days=SALES_DAYS_DEFAULT - 1, max_days=RANGE_MAX
        )

    async def sales(
        self,
        caller: Caller,
        days: tuple[date, date],
        *,
        package_id: str | None = None,
        status: str | None = None,
        limit: int = LIMIT_DEFAULT,
        cursor: str | None = None,
    ) -> SalesPage:
        """One page of the sales ledger, newest first, with totals over the whole ledger.

        ``days`` (:meth:`sales_days`) are the caller's zone's: from midnight of the first to
        midnight after the last (zoneinfo gives the instants, so a day of a DST change is 23
        or 25 hours). ``status`` is one of :data:`STATUSES`' names.
        """
        first_day, last_day = days
        stored_status = None if status is None else STATUSES[status]
        package_row_id = None
        cursors = await self.cursors()
        source_id = caller.application.source_id
        filters = (
            ("start", first_day.isoformat()),
            ("end", last_day.isoformat()),
            ("package", package_id),
            ("status", stored_status),
        )
        after = (
            key_position(cursors.read(cursor, "source/sales", source_id, filters))
            if cursor
            else None
        )
        if package_id is not None:
            package_row_id = (await self.own_package(caller, package_id, "its sales")).id
        first = int(_midnight(first_day, caller.timezone))
        stop = int(_midnight(last_day + timedelta(days=1), caller.timezone))
        found = await self._catalogue.sales(
            source_id,
            first,
            stop,
            limit + 1,
            after,
            package_row_id=package_row_id,
            status=stored_status,
        )
        totals = await self._catalogue.sales_totals(
            source_id, first, stop, package_row_id=package_row_id, status=stored_status
        )
        sales = tuple(found[:limit])
        following = None
        if len(found) > limit:
            last = sales[-1].purchase
            position = (int(last.purchased_at.timestamp()), last.txn_id)
            following = cursors.make("source/sales", source_id, filters, position)
        return SalesPage(first_day, last_day, sales, tuple(totals), limit, following)


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)
