"""A package's whitelist (YouRepo's ``package/whitelist``): read a page at a time, added to and
removed from in bulk, idempotently, with a secret key of the package's source; a device on
it owns the package wherever ownership is asked."""

from __future__ import annotations

import pytest

from pkgcat.domain import WhitelistEntry
from pkgcat.errors import InvalidArgument, PackageNotFound, PermissionDenied, ScopeMissing
from pkgcat.licences import WHITELIST_WRITE_MAX, WhitelistPage, WhitelistWrite
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.writes.whitelist import WhitelistChange
from tests.conftest import Clock
from tests.licences.conftest import UNKNOWN, Services, Worker

UDIDS = [f"00008030-{n:016X}" for n in range(37)]


@pytest.fixture
def writer(admin: CatalogueAdmin, catalogue: dict[str, str]) -> str:
    """A secret key of Alpha's that may write the whitelist."""
    return admin.create_key("Alpha", "alpha-a", ("whitelist",)).secret_key


def test_devices_are_added_in_bulk_and_paged_as_yourepo_pages_them(
    database_url: str, writer: str, clock: Clock, worker: Worker
) -> None:
    async def work(services: Services) -> tuple[WhitelistWrite, list[WhitelistPage]]:
        caller, _ = await services.service.admit(writer)
        entries = [(u, f"tester {n}") for n, u in enumerate(reversed(UDIDS))]
        done = await services.licences.whitelist_add(caller, "com.alpha.paid", entries)
        pages = [
            await services.licences.whitelist(caller, "com.alpha.paid"),
            await services.licences.whitelist(caller, "com.alpha.paid", limit=10, page=4),
            await services.licences.whitelist(caller, "com.alpha.paid", limit=10, page=5),
        ]
        return done, pages

    done, (first, last, past) = worker(work)
    assert done == WhitelistWrite("com.alpha.paid", WhitelistChange(added=37))
    assert (first.start, first.limit, first.total, first.page) == (0, 25, 37, 1)
    assert [e.udid for e in first.entries] == UDIDS[:25]  # by udid
    assert first.entries[0] == WhitelistEntry(UDIDS[0], "tester 36", clock.now)
    assert (last.start, last.total, [e.udid for e in last.entries]) == (30, 37, UDIDS[30:])
    assert (past.start, past.total, past.entries) == (40, 37, ())


def test_writes_are_idempotent_and_say_what_they_did(
    database_url: str, writer: str, worker: Worker
) -> None:
    async def work(services: Services) -> list[WhitelistChange]:
        caller, _ = await services.service.admit(writer)
        add, remove = services.licences.whitelist_add, services.licences.whitelist_remove
        return [
            (await add(caller, "com.alpha.paid", [(UDIDS[0], "a"), (UDIDS[1], "b")])).change,
            (await add(caller, "com.alpha.paid", [(UDIDS[0], "a"), (UDIDS[1], "B")])).change,
            (await remove(caller, "com.alpha.paid", [UDIDS[0], UNKNOWN])).change,
            (await remove(caller, "com.alpha.paid", [UDIDS[0]])).change,
            # A device given twice in one request: once, with its last description.
            (await add(caller, "com.alpha.paid", [(UDIDS[2], "x"), (UDIDS[2], "y")])).change,
        ]

    assert worker(work) == [
        WhitelistChange(added=2),
        WhitelistChange(updated=1, unchanged=1),
        WhitelistChange(removed=1, unchanged=1),
        WhitelistChange(unchanged=1),
        WhitelistChange(added=1),
    ]


def test_a_whitelisted_device_owns_the_package_at_once(
    database_url: str, writer: str, worker: Worker
) -> None:
    async def work(services: Services) -> list[bool]:
        caller, _ = await services.service.admit(writer)
        check = services.service.check
        owned = [(await check(caller, "com.alpha.paid", "udid", UNKNOWN)).owned]
        await services.licences.whitelist_add(caller, "com.alpha.paid", [(UNKNOWN, "")])
        owned.append((await check(caller, "com.alpha.paid", "udid", UNKNOWN)).owned)
        await services.licences.whitelist_remove(caller, "com.alpha.paid", [UNKNOWN])
        owned.append((await check(caller, "com.alpha.paid", "udid", UNKNOWN)).owned)
        return owned

    assert worker(work) == [False, True, False]


def test_the_whitelist_is_its_own_sources_and_writes_need_their_scope(
    database_url: str, catalogue: dict[str, str], writer: str, worker: Worker
) -> None:
    reader = catalogue["alpha-b"]  # read-only

    async def work(services: Services) -> None:
        licences = services.licences
        caller, _ = await services.service.admit(reader)
        assert (await licences.whitelist(caller, "com.alpha.paid")).total == 0
        with pytest.raises(ScopeMissing, match="'whitelist'"):
            await licences.whitelist_add(caller, "com.alpha.paid", [(UNKNOWN, "")])
        with pytest.raises(ScopeMissing):
            await licences.whitelist_remove(caller, "com.alpha.paid", [UNKNOWN])
        caller, _ = await services.service.admit(writer)
        with pytest.raises(PermissionDenied):
            await licences.whitelist(caller, "com.beta.paid")
        with pytest.raises(PermissionDenied):
            await licences.whitelist_add(caller, "com.beta.paid", [(UNKNOWN, "")])
        with pytest.raises(PackageNotFound):
            await licences.whitelist_remove(caller, "com.nobody", [UNKNOWN])

    worker(work)


@pytest.mark.parametrize(
    ("entries", "parameter"),
    [
        ([], "udid"),
        ([(u, "") for u in UDIDS * 14][: WHITELIST_WRITE_MAX + 1], "udid"),
        ([("not a udid", "")], "udid"),
        ([("", "")], "udid"),
        ([("a" * 65, "")], "udid"),
        ([(UNKNOWN, "x" * 201)], "description"),
        ([(UNKNOWN, "bell\x07")], "description"),
    ],
)
def test_malformed_writes_are_refused_naming_the_parameter(
    database_url: str, writer: str, worker: Worker, entries: list[tuple[str, str]], parameter: str
) -> None:
    async def work(services: Services) -> None:
        caller, _ = await services.service.admit(writer)
        with pytest.raises(InvalidArgument) as refused:
            await services.licences.whitelist_add(caller, "com.alpha.paid", entries)
        assert refused.value.parameter == parameter
        assert (await services.licences.whitelist(caller, "com.alpha.paid")).total == 0

    worker(work)


def test_deleting_a_source_counts_and_takes_its_whitelists(
    admin: CatalogueAdmin, database_url: str, writer: str, worker: Worker
) -> None:
    async def work(services: Services) -> None:
        caller, _ = await services.service.admit(writer)
        await services.licences.whitelist_add(caller, "com.alpha.paid", [(UNKNOWN, "")])

    worker(work)
    gone = admin.delete_source("Alpha", cascade=True)
    assert gone.counts["whitelist"] == 1
    assert "1 whitelisted device" in gone.describe()
