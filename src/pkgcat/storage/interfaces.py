"""What the use cases need from storage, as Protocols: four seams, each with its own backends.

- :class:`Executor`: how a backend runs a statement; the catalogue's reads (keys, packages,
  buyers, the seller reads) are declared once over it in :mod:`pkgcat.storage.reads`.
  Backends: :mod:`pkgcat.storage.sqlite.catalogue`, :mod:`pkgcat.storage.postgres.catalogue`.
  :class:`pkgcat.storage.cache.CachedCatalogue` keeps what the generation covers.
- :class:`ChangeFeed`: how a process learns that the catalogue changed (the
  catalogue generation), so caches know when to drop what they hold.
- :class:`UsageCounter`: the durable per-day request counts and the keys'
  last-used times, and the reads of those counts.
- :class:`RateLimiter`: one limit per application, in process memory or Redis.

Writes (operator commands and imports) go through :mod:`pkgcat.storage.admin`
and :mod:`pkgcat.storage.writes`, on SQLAlchemy Core: the same code for every
database, with the dialect's differences kept inside those modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import date
from typing import Any, NamedTuple, Protocol

from pkgcat.domain import Purchase, RateDecision

BuyerKey = tuple[int, str]
"""Where a buyer stands in newest-first order: (purchased_at, txn_id)."""


class BuyersHint(NamedTuple):
    """What a reader may reuse from an earlier read of the same package's buyers.

    Valid only while the catalogue generation is still ``generation``; a
    reader checks that inside its snapshot and ignores a stale hint.
    """

    generation: int
    total: int | None
    """The number of buyers, when known."""
    position: int = 0
    """How many buyers come up to and including ``after``."""
    after: BuyerKey | None = None
    """Start right after this buyer instead of at the newest."""


class Counted(NamedTuple):
    """What the commit that carried a request's count says about it."""

    requests: int
    """The application's count on the day as the commit left it (this request included);
    0 when the count was dropped because its key or application had gone."""
    generation: int
    """The catalogue generation in the commit's own snapshot, or -1 when the backend does
    not read it there (PostgreSQL, whose change feed is pushed)."""


class PoolUse(NamedTuple):
    """A worker's pool of database connections, as ``/metrics`` shows it."""

    size: int
    """Connections open."""
    in_use: int
    """Connections lent to a request or a commit right now."""
    max_size: int
    """The most the pool opens (``PKGCAT_DATABASE_POOL_SIZE``)."""


class BuyersSlice(NamedTuple):
    """Buyers read in one snapshot: its generation, the total and the slice asked for."""

    generation: int
    total: int
    purchases: list[Purchase]


class ChangeFeed(Protocol):
    """The catalogue generation: a number that changes whenever anything the API reads changes.

    Triggers (migration 0003) increment it on every change to sources,
    applications, keys (other than their last-used time), packages and
    purchases, and the operator's statistics loads increment it too.
    """

    def start(self) -> None:
        """Begin following changes, at the worker's start (on its event loop): where they
        are pushed, the listener runs from then on, reconnecting by itself, so that the
        caches and ``/readyz`` are right before any request arrives."""
        ...

    def current(self) -> int:
        """The generation as this process knows it now, at no cost; read at the start of a request.

        A negative number means "unknown": nothing may be served from a cache.
        Where the database pushes changes (PostgreSQL) it follows them within a
        notification's trip. On SQLite it is what the last commit of counts
        read, so it may be older until the request's own count is committed:
        the request path reads it again after that (``CatalogueService.admit``).
        """
        ...

    async def latest(self) -> int:
        """The generation as the database holds it now, for the rare request that commits nothing.

        A read on SQLite; the pushed :meth:`current` where changes are pushed.
        """
        ...

    async def close(self) -> None: ...


class Row(Protocol):
    """A row read by column name (``sqlite3.Row`` and asyncpg's ``Record`` both are)."""

    def __getitem__(self, name: str, /) -> Any: ...


class Executor(Protocol):
    """What a database backend does for the catalogue's reads: run one statement.

    Every read is declared once (:mod:`pkgcat.storage.reads`), in portable SQL with ``?``
    parameters; a backend only runs it. A statement given text PostgreSQL cannot hold (a
    NUL character) finds nothing there, as no stored text holds one.
    """

    collate: str
    """What follows an identifier compared in order, so that it compares byte by byte."""

    async def row(self, sql: str, parameters: tuple[object, ...] = ()) -> Row | None:
        """The statement's first row, or ``None``."""
        ...

    async def rows(self, sql: str, parameters: tuple[object, ...] = ()) -> Sequence[Row]:
        """Every row of the statement."""
        ...

    def snapshot(self) -> AbstractAsyncContextManager[Executor]:
        """One read transaction: the statements run on what it gives see one snapshot."""
        ...

    async def close(self) -> None: ...


class UsageCounter(Protocol):
    """Durable per-day request counts (also by operation), the last-used time of each key, and
    the served repository's whole downloads per package and day.

    What it counted is read back by :class:`pkgcat.storage.reads.Catalogue` (``usage``,
    ``usage_operations``, ``downloads``), save a package's downloads in all, which a
    counter may keep (:meth:`downloads_total`)."""

    async def record(
        self,
        application_id: int,
        day: date,
        key_id: int,
        when: int,
        operation: str,
        cutoff: float | None = None,
    ) -> Counted:
        """Count one request of ``operation`` on ``day``; note that key ``key_id`` was used at ``when``.

        A caller cancelled before its commit is not counted; one cancelled while its
        commit was under way is taken back (:meth:`retract`) if that commit lands. A
        commit that reaches the database after ``cutoff`` (POSIX seconds, the database's
        clock) counts nothing, and the call fails as for an unreachable database. So does a
        commit whose reply was lost (PostgreSQL): the backend then learns whether it landed
        and, if it had, takes it back. A call that fails is never counted in the end, and
        one that returns is counted once: each batch is applied exactly once.

        The day's count and its count by operation are committed together: a
        day's counts by operation always sum to its count (save days whose
        counts the operator loaded, which have none by operation).

        The count is committed when the call returns: it survives the worker that
        made it being killed. A power loss may lose the last commits on SQLite, and
        by default a crash of PostgreSQL or of its machine the last fraction of a
        second of them (docs/architecture.md, Durability). Returns the application's
        count on ``day`` as the commit that carried this one left it (this
        request and every count committed before it included), so that a usage
        report needs no read of its own for today, or 0 when the count was
        dropped (on SQLite a key revoked or deleted by then, on both an
        application deleted); and, where the backend reads it in the same
        snapshot, the catalogue generation. Last-used times may be kept at a
        coarser resolution (a minute) to keep writes off the hot path.
        """
        ...

    def retract(self, application_id: int, day: date, operation: str) -> None:
        """Take back one committed count of ``operation`` on ``day``, with the next commit.

        For a request answered 503 after its count landed. Kept until a commit that
        carries it is known to have landed (one that fails keeps it for the next; one whose
        fate is unknown keeps it until that is known): never lost, never applied twice.
        """
        ...

    async def record_download(self, package: str, day: date, count: int = 1) -> None:
        """Count one whole download of ``package``'s file on ``day`` (UTC); ``count=-1`` takes
        back one counted before its file went out, when the file could not be sent.

        Committed with the requests' counts of the same batch (the same group
        commit); committed when the call returns, as :meth:`record`'s count is, and raises
        when the commit failed, under the same rules (a caller cancelled before its commit
        is not counted, one cancelled after is taken back). A take-back is owed as
        :meth:`retract`'s is: the call waits for one commit and never raises.
        """
        ...

    async def reachable(self) -> None:
        """Return once the database has taken a commit of the counts' batch, carrying no
        count; raise as :meth:`record_download` would when it cannot (unreachable, locked).

        Asked before a download's first byte, so that a download whose count could not be
        written is refused before it starts; it joins the group commit like a count, so the
        downloads starting together cost one round trip.
        """
        ...

    async def downloads_total(self, package: str) -> int:
        """Every counted download of ``package``: what details adds to the imported figure.

        A backend may keep it between calls while it is told of every change
        (PostgreSQL's notifications); it is never older than the last
        :meth:`record_download` of this process.
        """
        ...

    async def close(self) -> None: ...


class FailureLimiter(Protocol):
    """Failed authentications counted per client address, in fixed windows of an allowance."""

    @property
    def limit(self) -> int:
        """Failures a window allows."""
        ...

    @property
    def window(self) -> int:
        """Seconds a window lasts."""
        ...

    async def hit(self, application_id: int | str) -> RateDecision:
        """Count one failure of a client (its address) unless its allowance is spent."""
        ...

    async def close(self) -> None: ...


class RateLimiter(Protocol):
    """One limit per application, shared by every operation."""

    async def hit(self, application_id: int) -> RateDecision:
        """Count one request against the limit unless it is already exhausted."""
        ...

    async def ready(self) -> None:
        """Raise when the limit's store cannot be reached (for ``/readyz``)."""
        ...

    async def close(self) -> None: ...
