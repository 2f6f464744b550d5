"""Outbound requests: the one safe way pkgcat fetches anything from another host.

Every request the project makes to another host (an import's repository files
and depictions today; mirrored packages, webhooks and payment platforms later)
goes through :class:`~pkgcat.net.fetcher.Fetcher` or
:class:`~pkgcat.net.fetcher.AsyncFetcher`, built from one
:class:`~pkgcat.net.fetcher.Policy`:

- :mod:`pkgcat.net.addresses`: which addresses may be reached (``PKGCAT_FETCH_ALLOW``);
- :mod:`pkgcat.net.backends`: connections made only to addresses checked after resolution,
  every wait cut at the exchange's deadline;
- :mod:`pkgcat.net.fetcher`: the clients, their limits (bytes on the wire and once decoded,
  a deadline) and redirects followed only where the caller allows them;
- :mod:`pkgcat.net.decoding`: gzip decoded in bounded pieces;
- :mod:`pkgcat.net.errors`: why a request failed.

Nothing is imported here, so that reading the settings (``pkgcat.config`` checks
``PKGCAT_FETCH_ALLOW`` with :mod:`pkgcat.net.addresses`) does not load httpx.
"""
