"""What the use cases need from storage, as Protocols.

The request path talks only to these. :mod:`pkgcat.storage.sqlite` implements
the store and the counter on SQLite; :mod:`pkgcat.storage.limiter` implements
the limiter on the ``limits`` library. Other backends (PostgreSQL, Redis) plug
in here without the services or the HTTP layer changing.
"""

from __future__ import annotations

from datetime import date
from typing import Protocol

from pkgcat.domain import KeyRecord, Package, Purchase, RateDecision


class CatalogueStore(Protocol):
    """Reads of the catalogue that the three operations make."""

    async def generation(self) -> int:
        """A number that changes whenever anything the operations read changes.

        Called first by every request; what depends only on the catalogue (not on
        usage counts) may be cached for as long as it stays the same.
        """
        ...

    async def find_key(self, key_hash: str) -> KeyRecord | None:
        """The live (not revoked) key with this hash, with its application."""
        ...

    async def touch_key(self, record: KeyRecord, when: int) -> None:
        """Record that the key was used at ``when`` (unix seconds); durable with the next count."""
        ...

    async def package(self, package_id: str) -> Package | None:
        """The package with this identifier, online or not."""
        ...

    async def buyers(
        self, package_row_id: int, source_id: int, limit: int, offset: int
    ) -> tuple[int, list[Purchase]]:
        """The total number of buyers of a package and one slice of them.

        Buyers are the package's own purchases and the purchases of its whole
        source, newest first, ties broken by ``txn_id``.
        """
        ...

    async def usage(self, application_id: int, first: date, last: date) -> dict[date, int]:
        """Counted requests per day between ``first`` and ``last`` inclusive (days with none absent)."""
        ...

    async def close(self) -> None: ...


class UsageCounter(Protocol):
    """Durable per-day request counters."""

    async def increment(self, application_id: int, day: date) -> None:
        """Add one request to ``day``; durable when the call returns."""
        ...

    async def close(self) -> None: ...


class RateLimiter(Protocol):
    """One limit per application, shared by the three operations."""

    async def hit(self, application_id: int) -> RateDecision:
        """Count one request against the limit unless it is already exhausted."""
        ...
