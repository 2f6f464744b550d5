"""Screenshots from Sileo native depictions (the JSON a ``SileoDepiction`` field points at).

Every ``DepictionScreenshotsView`` of the depiction, at any depth (tabs, stacks,
nested views), gives the ``url`` of each of its ``screenshots`` (and of its
``ipad`` variant), resolved against the depiction's own address; duplicates
are dropped and the order kept.

Which depictions are read (``--depictions``):

- ``repo`` (the default): those inside the repository, that is, whose address
  starts with the repository's address (http and https alike); they are read
  from LOCATION itself, a local directory or the server being imported from;
- ``all``: those, and any other http(s) address, fetched;
- ``off``: none.

A depiction that cannot be read or is not JSON leaves the record without
screenshots and is reported as a warning; it never stops an import.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal
from urllib.parse import urljoin

import httpx
import orjson

from pkgcat.ingest.errors import FetchError
from pkgcat.ingest.fetch import Reader, get

DepictionMode = Literal["repo", "all", "off"]
DEPICTION_MODES: tuple[DepictionMode, ...] = ("repo", "all", "off")
FETCHERS = 8
"""Depictions fetched at once over http(s)."""


def _bare(address: str) -> str:
    return address.split("://", 1)[-1]


def screenshots_of(depiction: Any, address: str) -> tuple[str, ...]:
    """The screenshot addresses of a parsed depiction document."""
    found: dict[str, None] = {}

    def views(node: Any) -> Iterator[dict[str, Any]]:
        if isinstance(node, dict):
            if node.get("class") == "DepictionScreenshotsView":
                yield node
                ipad = node.get("ipad")
                if isinstance(ipad, dict):
                    yield ipad
            for value in node.values():
                yield from views(value)
        elif isinstance(node, list):
            for value in node:
                yield from views(value)

    for view in views(depiction):
        shots = view.get("screenshots")
        for shot in shots if isinstance(shots, list) else ():
            url = shot.get("url") if isinstance(shot, dict) else None
            if isinstance(url, str) and url.strip():
                resolved = urljoin(address, url.strip())
                if resolved.startswith(("http://", "https://")):
                    found[resolved] = None
    return tuple(found)


class Depictions:
    """Reads depictions for one import, each address once."""

    def __init__(
        self, mode: DepictionMode, repository_url: str, reader: Reader, client: httpx.Client
    ) -> None:
        self.mode = mode
        base = repository_url if repository_url.endswith("/") else repository_url + "/"
        self._inside = _bare(base) if repository_url else None
        self._reader = reader
        self._client = client
        self._cache: dict[str, tuple[str, ...]] = {}
        self.failures: list[str] = []
        self.outside: set[str] = set()
        """Depictions left unread because they are outside the repository (mode ``repo``)."""

    def _read(self, address: str) -> tuple[str, ...]:
        bare = _bare(address)
        try:
            if self._inside is not None and bare.startswith(self._inside):
                data = self._reader.read(bare[len(self._inside) :])
            else:
                data = get(self._client, address)
        except FetchError as error:
            self.failures.append(str(error))
            return ()
        if data is None:
            self.failures.append(f"{address}: not found")
            return ()
        try:
            return screenshots_of(orjson.loads(data), address)
        except orjson.JSONDecodeError as error:
            self.failures.append(f"{address}: not a JSON depiction ({error})")
            return ()

    def _wanted(self, address: str) -> bool:
        if self.mode == "off" or not address:
            return False
        if self._inside is not None and _bare(address).startswith(self._inside):
            return True
        if self.mode == "all":
            return True
        self.outside.add(address)
        return False

    def screenshots(self, addresses: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """Screenshots of each depiction address (read once per import, several at a time)."""
        addresses = set(addresses)
        todo = sorted(a for a in addresses if a not in self._cache and self._wanted(a))
        if len(todo) > 1:
            with ThreadPoolExecutor(max_workers=FETCHERS) as pool:
                self._cache.update(zip(todo, pool.map(self._read, todo), strict=True))
        else:
            self._cache.update((a, self._read(a)) for a in todo)
        return {a: self._cache[a] for a in addresses if a in self._cache}
