"""Any response our server can render, in either shape and any zone, reads back to its values.

Records are generated as the server's domain objects, rendered by the server's
own :mod:`pkgcat.models`, sent through JSON as on the wire, and read by the
client given the application's zone. Only what shape B cannot carry may differ:
the A-only fields (``None``), the scheme of addresses, and a wall time that
occurs twice when clocks go back (shape B has no offset to tell them apart).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgcat import models
from pkgcat.client import Client, Operator, Relation
from pkgcat.domain import SHAPES, Package, Purchase, Shape, Source, UsageDay
from pkgcat.services import BuyersPage
from tests.client.conftest import BASE, KEY, answer

ZONES = [
    "UTC",
    "Europe/Paris",
    "America/New_York",
    "Asia/Kolkata",
    "Australia/Lord_Howe",  # half-hour daylight saving
    "America/Santiago",  # clocks change at midnight
    "Pacific/Kiritimati",  # +14:00
]
zones = st.sampled_from(ZONES).map(ZoneInfo)
instants = st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(2099, 12, 31), timezones=st.just(UTC)
).map(lambda d: d.replace(microsecond=0))
counts = st.integers(min_value=0, max_value=10**12)
amounts = st.decimals(min_value=0, max_value=10**6, places=2, allow_nan=False, allow_infinity=False)
words = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
LOWER = "abcdefghijklmnopqrstuvwxyz0123456789"


def chars(alphabet: str, low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=low, max_size=high)


addresses = st.builds(
    lambda scheme, path: f"{scheme}://cdn.example/{path}",
    st.sampled_from(["http", "https"]),
    chars(LOWER + "/._-", 0, 20),
)
hex_digits = "0123456789abcdef"

# --- relation fields, generated with the relations they must read as --------------------------

names = st.builds(str.__add__, chars(LOWER, 1, 1), chars(LOWER + "+.-", 0, 15))
versions = st.builds(str.__add__, chars("0123456789", 1, 1), chars(LOWER + "ABZ.+~:-", 0, 10))
spaces = st.sampled_from(["", " ", "  "])
OPERATORS: tuple[Operator, ...] = ("<<", "<=", "=", ">=", ">>")


@st.composite
def relation(draw: st.DrawFn) -> tuple[str, Relation]:
    name = draw(names)
    text, version = name, None
    operator: Operator | None = None
    if draw(st.booleans()):
        operator = draw(st.sampled_from(OPERATORS))
        version = draw(versions)
        text += f"{draw(spaces)}({draw(spaces)}{operator}{draw(spaces)}{version}{draw(spaces)})"
    architectures = tuple(
        draw(
            st.lists(
                st.builds(str.__add__, st.sampled_from(["", "!"]), chars(LOWER + "-", 1, 8)),
                max_size=3,
            )
        )
    )
    if architectures:
        text += f"{draw(spaces)}[{' '.join(architectures)}]"
    return text, Relation(name, operator, version, architectures)


@st.composite
def relation_field(draw: st.DrawFn) -> tuple[str, tuple[tuple[Relation, ...], ...]]:
    groups = draw(st.lists(st.lists(relation(), min_size=1, max_size=3), max_size=4))
    raw = ", ".join(" | ".join(text for text, _ in group) for group in groups)
    return raw, tuple(tuple(parsed for _, parsed in group) for group in groups)


# --- helpers -----------------------------------------------------------------------------------


def read(body: Any, zone: ZoneInfo) -> Client:
    """A client whose server answers ``body`` as our server would put it on the wire."""
    wire = orjson.loads(orjson.dumps(body))
    return Client(BASE, KEY, transport=httpx.MockTransport(lambda _: answer(0, wire)), tz=zone)


def same_instant_or_repeated_wall_time(got: datetime, want: datetime, zone: ZoneInfo) -> None:
    """``got`` is ``want``; in shape B, the first reading of a wall time that occurs twice."""
    if got == want:
        return
    wall = want.astimezone(zone).replace(tzinfo=None)
    first, second = (wall.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1))
    assert first != second, f"{got} != {want}"
    assert got.astimezone(UTC) == first


def without_scheme(address: str) -> str:
    return address.split("://", 1)[-1]


# --- the properties ----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    shape=st.sampled_from(SHAPES),
    zone=zones,
    start=st.dates(min_value=date(1971, 1, 1), max_value=date(2099, 1, 1)),
    values=st.lists(counts, min_size=1, max_size=40),
)
def test_usage(shape: Shape, zone: ZoneInfo, start: date, values: list[int]) -> None:
    days = [UsageDay(day=start + timedelta(days=n), requests=c) for n, c in enumerate(values)]
    got = read(models.usage_body(days, shape, zone), zone).usage()
    assert [(d.day, d.usage) for d in got] == [(d.day, d.requests) for d in days]
    for entry, day in zip(got, days, strict=True):
        assert entry.date == datetime(day.day.year, day.day.month, day.day.day, tzinfo=zone)
        assert type(entry.usage) is int


packages = st.builds(
    Package,
    id=st.just(1),
    package=names,
    source=st.builds(Source, id=st.just(1), name=words, origin=words, url=addresses),
    name=words,
    version=versions,
    architecture=words,
    author=words,
    section=words,
    description=words,
    long_description=words,
    pre_depends=st.just(""),  # set from relation_field() below, with what it must read as
    depends=st.just(""),
    conflicts=st.just(""),
    replaces=st.just(""),
    size=counts,
    md5sum=chars(hex_digits, 32, 32),
    sha256=st.sampled_from(["", "0" * 64]) | chars(hex_digits, 64, 64),  # '' when none is listed
    compatible=st.lists(words, max_size=4).map(tuple),
    total_download=counts,
    total_votes=counts,
    total_value_votes=counts,
    online=st.booleans(),
    price=st.none() | amounts,  # None: a paid package whose price is not known yet
    currency=st.sampled_from(["USD", "EUR"]),
    icon=addresses | st.just(""),
    screenshots=st.lists(addresses, max_size=3).map(tuple),
    url=addresses,
    released_at=instants,
)


@settings(max_examples=80, deadline=None)
@given(
    shape=st.sampled_from(SHAPES),
    zone=zones,
    package=packages,
    fields=st.lists(relation_field(), min_size=4, max_size=4),
)
def test_package(shape: Shape, zone: ZoneInfo, package: Package, fields: list[Any]) -> None:
    relations = dict(zip(["pre_depends", "depends", "conflicts", "replaces"], fields, strict=True))
    package = replace(package, **{name: raw for name, (raw, _) in relations.items()})
    got = read(models.package_body(package, shape, zone), zone).package(package.package)

    for name in (
        "package", "name", "version", "author", "section", "description", "long_description",
        "size", "md5sum", "compatible", "total_download", "total_votes", "total_value_votes",
        "online", "price", "currency",
    ):  # fmt: skip
        assert getattr(got, name) == getattr(package, name), name
    assert type(got.size) is int
    assert got.price is None or isinstance(got.price, Decimal)
    same_instant_or_repeated_wall_time(got.date, package.released_at, zone)
    for name, (raw, groups) in relations.items():
        parsed = getattr(got, name)
        if name == "replaces" and shape == "B":
            assert parsed is None
            continue
        assert (parsed.raw, parsed.groups) == (raw, groups), name
    a = shape == "A"
    assert got.architecture == (package.architecture if a else None)
    assert got.sha256 == (package.sha256 or None if a else None)
    assert got.source.origin == (package.source.origin if a else None)
    assert got.source.name == package.source.name
    for mine, theirs in [
        (got.icon, package.icon),
        (got.url, package.url),
        (got.source.url, package.source.url),
        *zip(got.screenshots, package.screenshots, strict=True),
    ]:
        assert without_scheme(mine) == without_scheme(theirs)
        assert mine.startswith("https://" if a else "http://") or mine == theirs == ""


purchases = st.builds(
    Purchase,
    nickname=words,
    status=st.sampled_from(["Completed", "Refunded"]),
    total=amounts,
    commission=amounts,
    currency=st.sampled_from(["USD", "EUR"]),
    purchased_at=instants,
    txn_id=chars("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789", 17, 17),
    profile_url=addresses,
    allowed_for=st.sampled_from(["package", "source"]),
    payment_platform=st.sampled_from(["paypal", "stripe"]),
)


@settings(max_examples=60, deadline=None)
@given(
    shape=st.sampled_from(SHAPES),
    zone=zones,
    page=st.integers(min_value=1, max_value=10**6),
    limit=st.integers(min_value=1, max_value=100),
    total=counts,
    buyers=st.lists(purchases, max_size=8),
)
def test_buyers(
    shape: Shape, zone: ZoneInfo, page: int, limit: int, total: int, buyers: list[Purchase]
) -> None:
    rendered = BuyersPage((page - 1) * limit, limit, total, page, tuple(buyers))
    got = read(models.buyers_body(rendered, shape, zone), zone).buyers("p", limit, page)
    assert (got.start, got.limit, got.total, got.page) == ((page - 1) * limit, limit, total, page)
    assert len(got.buyers) == len(buyers)
    for mine, theirs in zip(got.buyers, buyers, strict=True):
        assert mine.date == theirs.purchased_at  # ISO 8601 with offset in both shapes
        assert (mine.total, mine.commission) == (theirs.total, theirs.commission)
        assert (mine.nickname, mine.status, mine.txn_id) == (
            theirs.nickname,
            theirs.status,
            theirs.txn_id,
        )
        assert (mine.allowed_for, mine.payment_platform, mine.currency) == (
            theirs.allowed_for,
            theirs.payment_platform,
            theirs.currency,
        )
        assert without_scheme(mine.profile_url) == without_scheme(theirs.profile_url)


@settings(max_examples=5, deadline=None)
@given(package=packages)
def test_a_wall_time_that_occurs_twice_reads_as_its_first_occurrence(package: Package) -> None:
    paris = ZoneInfo("Europe/Paris")
    # 02:30 happens twice in Paris on 27 October 2024: at 00:30 and at 01:30 UTC.
    package = replace(package, released_at=datetime(2024, 10, 27, 1, 30, tzinfo=UTC))
    got = read(models.package_body(package, "B", paris), paris).package(package.package)
    assert got.date.isoformat() == "2024-10-27T02:30:00+02:00"
    assert got.date == datetime(2024, 10, 27, 0, 30, tzinfo=UTC)
