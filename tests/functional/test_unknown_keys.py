"""Keys no catalogue holds: refused again without a lookup, forgotten when a key is created,
and never more of them kept than their share of the cache, on both databases; packages no
catalogue holds, kept as found ones are."""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import insert

from pkgcat import keys
from pkgcat.config import Settings
from pkgcat.storage import schema
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.backends import Storage, open_storage
from pkgcat.storage.cache import cache_bytes
from pkgcat.storage.engine import engine_for, write_transaction
from tests import factories as f
from tests.conftest import AppFactory

DETAILS = "/1.0/package/details.json"


def _create_key(database_url: str, secret: str, application_id: int) -> None:
    """What ``pkgcat key create`` writes, for a secret the test chose."""
    engine = engine_for(database_url)
    try:
        with write_transaction(engine) as db:
            db.execute(
                insert(schema.secret_keys).values(
                    application_id=application_id,
                    key_hash=keys.hash_key(secret),
                    prefix=keys.display_prefix(secret),
                    created_at=int(time.time()),
                )
            )
    finally:
        engine.dispose()


def test_a_key_created_after_it_was_refused_is_accepted_at_once(
    make_api: AppFactory, database_url: str
) -> None:
    api = make_api()
    secret = keys.new_key()
    for _ in range(3):  # the first lookup finds nothing; the next ones are answered from memory
        refused = api.get(DETAILS, secret, package="com.alpha.paid")
        assert (refused.status_code, refused.json()["code"]) == (401, 5)
    _create_key(database_url, secret, application_id=1)
    # At once: on SQLite with no count committed since (the worker has not heard of the key);
    # on PostgreSQL once its notification has come (``Api.get`` waits for it).
    accepted = api.get(DETAILS, secret, package="com.alpha.paid")
    assert accepted.status_code == 200


async def _knowing_the_generation(storage: Storage) -> None:
    """Wait until the worker knows the catalogue generation (a pushed one takes a moment):
    before, it trusts no cache."""
    deadline = time.monotonic() + 5
    while await storage.catalogue.latest_generation() < 0:
        assert time.monotonic() < deadline, "the generation was not known within 5 s"
        await asyncio.sleep(0.005)  # waiting for the listener, not timing anything
    await storage.catalogue.generation()


def test_an_unknown_key_asked_again_is_answered_from_the_cache(
    database_url: str, catalogue: dict[str, str]
) -> None:
    key_hash = keys.hash_key(keys.new_key())

    async def lookups() -> tuple[int, int]:
        storage = open_storage(Settings(database_url=database_url))
        try:
            await _knowing_the_generation(storage)
            unknown = storage.catalogue.caches()["unknown_keys"]
            for _ in range(5):
                assert await storage.catalogue.find_key(key_hash) is None
            return unknown.hits, unknown.misses
        finally:
            await storage.close()

    assert asyncio.run(lookups()) == (4, 1)


def test_random_keys_never_hold_more_than_their_share_of_the_cache(
    database_url: str, catalogue: dict[str, str]
) -> None:
    """20,000 random keys against a worker of the smallest budget (1 MiB): the unknown keys it
    keeps stay within their share, the newest kept, and a real key is still found."""
    budget = 1024 * 1024
    share = cache_bytes(budget, "unknown_keys")

    async def flood() -> None:
        storage = open_storage(Settings(database_url=database_url, cache_max_bytes=budget))
        try:
            await _knowing_the_generation(storage)
            catalogue_ = storage.catalogue
            unknown = catalogue_.caches()["unknown_keys"]
            hashes = [keys.hash_key(keys.new_key()) for _ in range(20_000)]
            for key_hash in hashes:
                await catalogue_.generation()
                assert await catalogue_.find_key(key_hash) is None
                assert unknown.nbytes <= share
            assert 0 < len(unknown) < len(hashes)
            misses = unknown.misses
            assert await catalogue_.find_key(hashes[-1]) is None
            assert unknown.misses == misses  # the newest is kept
            found = await catalogue_.find_key(keys.hash_key(catalogue["alpha-a"]))
            assert found is not None
        finally:
            await storage.close()

    asyncio.run(flood())


def test_an_unknown_package_is_kept_as_a_found_one_is(
    database_url: str, catalogue: dict[str, str]
) -> None:
    """Both are code 8 to another source; if only the found one were kept, the time of an
    answer would tell that another seller's offline package exists."""

    async def reads(package_id: str) -> int:
        storage = open_storage(Settings(database_url=database_url))
        try:
            await _knowing_the_generation(storage)
            caches = storage.catalogue.caches()
            watched = ("packages", "unknown_packages")
            for _ in range(5):
                await storage.catalogue.package(package_id)
            return sum(caches[name].hits for name in watched if name in caches)
        finally:
            await storage.close()

    offline, unknown = asyncio.run(reads("com.alpha.offline")), asyncio.run(reads("com.no.such"))
    assert offline == unknown == 4


def test_a_package_that_appears_after_it_was_asked_for_is_found(
    make_api: AppFactory, admin: CatalogueAdmin
) -> None:
    api = make_api()
    key = api.keys["alpha-a"]
    for _ in range(2):
        assert api.get(DETAILS, key, package="com.alpha.later").json()["code"] == 8
    admin.load(packages=[f.package(6, 1, "com.alpha.later")])
    assert api.get(DETAILS, key, package="com.alpha.later").status_code == 200
