"""One generation-aware cache in front of any catalogue backend.

What the request path reads from the catalogue (keys, packages, the marks of
deep buyers pages, usage days that can no longer change) stays the same until
the catalogue generation changes (:class:`~pkgcat.storage.interfaces.ChangeFeed`).
:class:`CachedCatalogue` keeps those reads in memory for one generation and
drops them all when it moves. The feed decides what "now" costs: on SQLite it
is read inside each commit of usage counts; on PostgreSQL it is pushed by the
database (LISTEN/NOTIFY); either way a request makes no read to learn it.

Every entry is stored under the generation its read *started* in, and only
while that is still the cache's generation: a slow read that raced a change is
never kept. :class:`GenerationCache` is the one such map, also used for the
rendered answers of the HTTP layer.

Every cache is bounded in bytes, not in entries: an entry's size is estimated
when it is stored (:func:`footprint`), and the oldest entries make room for a
new one. The worker's whole budget (``PKGCAT_CACHE_MAX_BYTES``) is shared out
by :data:`CACHE_SHARES`.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any, Generic, TypeVar

from pkgcat.domain import KeyRecord, Package, SalesTotal
from pkgcat.storage.interfaces import BuyerKey, BuyersHint, BuyersSlice, ChangeFeed, Executor
from pkgcat.storage.reads import Catalogue

K = TypeVar("K")
V = TypeVar("V")

MARK_EVERY = 100
"""Deep buyers pages seek to a mark kept every this many buyers (the largest page)."""


CACHE_SHARES: dict[str, float] = {
    "responses": 7 / 16,  # rendered answers (http/routes.py)
    "sales": 1 / 16,  # sales totals per ledger (the same on every page of a walk)
    "packages": 6 / 32,
    "unknown_packages": 1 / 32,  # identifiers found in no catalogue
    "keys": 1 / 16,
    "unknown_keys": 1 / 32,  # hashes of keys found in no catalogue, about 12,000 by default
    "totals": 1 / 16,  # buyers counted per package
    "marks": 1 / 16,  # deep buyers pages' seek marks
    "history": 1 / 16,  # usage days that can no longer change
}
"""Each cache's part of the worker's budget; the parts add up to the whole."""


def cache_bytes(total: int, cache: str) -> int:
    """The bytes ``cache`` may hold out of a worker's ``total``."""
    return int(total * CACHE_SHARES[cache])


_ENTRY = 200
"""Bytes an entry costs beyond its key and value: its slots in the maps, the
ordering link, its recorded size and the allocator's rounding (a fair estimate
for CPython)."""


def footprint(value: object) -> int:
    """An estimate of the bytes ``value`` holds, following tuples, lists, dicts and dataclasses.

    Shared objects (a package's source, interned strings) count once per holder:
    the estimate errs on the safe side.
    """
    size = sys.getsizeof(value)
    if isinstance(value, tuple | list):
        size += sum(footprint(item) for item in value)
    elif isinstance(value, dict):
        size += sum(footprint(k) + footprint(v) for k, v in value.items())
    else:
        fields = getattr(type(value), "__dataclass_fields__", None)
        if fields is not None:
            size += sum(footprint(getattr(value, name)) for name in fields)
    return size


def entry_footprint(key: object, value: object) -> int:
    """The estimated bytes of one cache entry."""
    return _ENTRY + footprint(key) + footprint(value)


class GenerationCache(Generic[K, V]):
    """Values valid for one catalogue generation, at most ``max_bytes`` of them.

    ``sizeof`` estimates an entry's bytes (:func:`entry_footprint` unless told).
    When a new entry would pass the bound, the oldest entries go first; a value
    larger than the whole bound is not kept.

    ``hits`` and ``misses`` count the lookups since it was made (plain integers:
    ``/metrics`` reads them now and then, so a lookup pays no more than an addition).
    """

    def __init__(self, max_bytes: int, sizeof: Callable[[K, V], int] = entry_footprint) -> None:
        self._max_bytes = max_bytes
        self._sizeof = sizeof
        self._bytes = 0
        self._generation = -1
        self.hits = 0
        self.misses = 0
        # Ordered by insertion, so that the oldest goes first; a lookup is a plain dict's.
        self._values: OrderedDict[K, V] = OrderedDict()
        self._sizes: dict[K, int] = {}  # as estimated when stored

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @property
    def nbytes(self) -> int:
        """The estimated bytes held now; never more than :attr:`max_bytes`."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._values)

    def get(self, generation: int, key: K) -> V | None:
        if generation != self._generation:
            # Generations only grow: a request that started before the last change
            # misses, and leaves the newer entries alone.
            if generation > self._generation or generation < 0:
                self._generation = generation
                self._values.clear()
                self._sizes.clear()
                self._bytes = 0
            self.misses += 1
            return None
        value = self._values.get(key)
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def put(self, generation: int, key: K, value: V) -> None:
        """Keep ``value``, read in ``generation``, unless the cache has moved on (or never trusts)."""
        if generation != self._generation or generation < 0:
            return
        size = self._sizeof(key, value)
        if size > self._max_bytes:
            return
        values, sizes = self._values, self._sizes
        if values.pop(key, None) is not None:  # put again: it moves to the newest end
            self._bytes -= sizes.pop(key)
        self._bytes += size
        while self._bytes > self._max_bytes:
            oldest, _ = values.popitem(last=False)
            self._bytes -= sizes.pop(oldest)
        values[key] = value
        sizes[key] = size


class CachedCatalogue(Catalogue):
    """The :class:`~pkgcat.storage.reads.Catalogue`, keeping what the generation covers.

    Keys, packages, buyers' totals and marks, and sales totals are kept; every other read
    is the catalogue's own (the HTTP layer keeps their rendered answers).
    """

    def __init__(self, executor: Executor, changes: ChangeFeed, *, max_bytes: int) -> None:
        """``max_bytes`` is the worker's whole budget: this takes its shares of it."""
        super().__init__(executor)
        self._changes = changes
        self._generation = -1
        self._keys: GenerationCache[str, KeyRecord] = GenerationCache(
            cache_bytes(max_bytes, "keys")
        )
        # Hashes of keys no catalogue holds (a typo, a guess, a revoked key), so that asking
        # again costs no lookup while the generation holds; bounded like every cache, so
        # random keys cannot grow it, and dropped when a key is created (the generation moves).
        self._unknown: GenerationCache[str, bool] = GenerationCache(
            cache_bytes(max_bytes, "unknown_keys")
        )
        self._packages: GenerationCache[str, Package] = GenerationCache(
            cache_bytes(max_bytes, "packages")
        )
        # Identifiers no catalogue holds, kept as packages are: an unknown package and another
        # source's offline one are both code 8, and must take the same time, or the time would
        # tell that the offline one exists. Apart, so that asking for made-up ones cannot push
        # real packages out.
        self._unknown_packages: GenerationCache[str, bool] = GenerationCache(
            cache_bytes(max_bytes, "unknown_packages")
        )
        self._totals: GenerationCache[int, int] = GenerationCache(cache_bytes(max_bytes, "totals"))
        self._marks: GenerationCache[int, list[BuyerKey]] = GenerationCache(
            cache_bytes(max_bytes, "marks")
        )
        self._sales: GenerationCache[tuple[object, ...], list[SalesTotal]] = GenerationCache(
            cache_bytes(max_bytes, "sales")
        )
        # (application, first day asked) -> (the day the history stops before, its counts)
        self._history: GenerationCache[tuple[int, date], tuple[date, dict[date, int]]] = (
            GenerationCache(cache_bytes(max_bytes, "history"))
        )

    def start(self) -> None:
        """Start the change feed (at the worker's start): see ChangeFeed.start."""
        self._changes.start()

    async def generation(self) -> int:
        self._generation = self._changes.current()
        return self._generation

    async def latest_generation(self) -> int:
        self._generation = await self._changes.latest()
        return self._generation

    async def freshness(self) -> tuple[int, int]:
        """The generation in the database now, and the one this cache knows of.

        Equal when every change committed so far has reached this process; on
        PostgreSQL the second follows the first within a notification's trip;
        on SQLite it is what the worker's last commit of counts read.
        """
        return await super().generation(), self._changes.current()

    def caches(self) -> dict[str, GenerationCache[Any, Any]]:
        """The caches worth watching (``/metrics``), by name."""
        return {
            "keys": self._keys,
            "unknown_keys": self._unknown,
            "packages": self._packages,
            "unknown_packages": self._unknown_packages,
        }

    @property
    def known_generation(self) -> int:
        """The generation read by the latest request, without reading it again."""
        return self._generation

    async def find_key(self, key_hash: str) -> KeyRecord | None:
        generation = self._generation
        record = self._keys.get(generation, key_hash)
        if record is not None:
            return record
        if self._unknown.get(generation, key_hash):
            # Unknown as of this generation. A key created since has moved it: where changes
            # are pushed (PostgreSQL) the feed knows it already; on SQLite, where the worker
            # learns of changes by committing counts and a refused key commits none, it
            # takes one read of the generation, cheaper than the key's lookup.
            latest = await self._changes.latest()
            if latest == generation:
                return None
            generation = latest  # read in the newer one: kept once the cache has moved there
        record = await super().find_key(key_hash)
        if record is None:
            self._unknown.put(generation, key_hash, True)
        else:
            self._keys.put(generation, key_hash, record)
        return record

    async def package(self, package_id: str, *, fresh: bool = False) -> Package | None:
        if fresh:
            return await super().package(package_id)
        generation = self._generation
        package = self._packages.get(generation, package_id)
        if package is None:
            if self._unknown_packages.get(generation, package_id):
                return None
            package = await super().package(package_id)
            if package is None:
                self._unknown_packages.put(generation, package_id, True)
            else:
                self._packages.put(generation, package_id, package)
        return package

    async def buyers(
        self,
        package_row_id: int,
        source_id: int,
        limit: int,
        offset: int,
        hint: BuyersHint | None = None,  # noqa: ARG002 - the cache makes its own, from what it holds
    ) -> BuyersSlice:
        generation = self._generation
        total = self._totals.get(generation, package_row_id)
        position, after = 0, None
        if offset >= 2 * MARK_EVERY:
            marks = self._marks.get(generation, package_row_id)
            if marks is None:
                read_in, marks = await self.buyer_marks(package_row_id, source_id, MARK_EVERY)
                if read_in == generation:
                    self._marks.put(generation, package_row_id, marks)
            index = min(offset // MARK_EVERY, len(marks))
            if index:
                position, after = index * MARK_EVERY, marks[index - 1]
        found = await super().buyers(
            package_row_id,
            source_id,
            limit,
            offset,
            BuyersHint(generation, total, position, after),
        )
        if found.generation == generation:
            self._totals.put(generation, package_row_id, found.total)
        return found

    # Sales totals are kept per generation, as every page of a walk shares them.

    async def sales_totals(
        self,
        source_id: int,
        first: int,
        end: int,
        *,
        package_row_id: int | None = None,
        status: str | None = None,
    ) -> list[SalesTotal]:
        generation = self._generation
        key = (source_id, first, end, package_row_id, status)
        found = self._sales.get(generation, key)
        if found is None:
            found = await super().sales_totals(
                source_id, first, end, package_row_id=package_row_id, status=status
            )
            self._sales.put(generation, key, found)
        return found

    async def usage(self, application_id: int, first: date, last: date) -> dict[date, int]:
        # Days before yesterday no longer change (requests are counted on their today):
        # they are read once per catalogue generation (operator loads of usage statistics
        # move it); yesterday and today every time.
        recent = last - timedelta(days=1)
        if first >= recent:
            return await super().usage(application_id, first, last)
        generation = self._generation
        history = self._history.get(generation, (application_id, first))
        if history is None or history[0] != recent:
            counts = await super().usage(application_id, first, recent - timedelta(days=1))
            history = (recent, counts)
            self._history.put(generation, (application_id, first), history)
        return history[1] | await super().usage(application_id, recent, last)

    async def close(self) -> None:
        await super().close()
        await self._changes.close()
