"""Screenshots from Sileo native depictions (the JSON a ``SileoDepiction`` field points at).

Every ``DepictionScreenshotsView`` of the depiction, at any depth (tabs, stacks,
nested views), gives the ``url`` of each of its ``screenshots`` (and of its
``ipad`` variant), resolved against the depiction's own address; duplicates
are dropped and the order kept.

Which depictions are read (``--depictions``):

- ``repo`` (the default): those inside the repository, that is, whose address,
  normalised, is on the repository's host and under its path (http and https
  alike, :func:`pkgcat.ingest.fetch.below`); they are read from LOCATION itself,
  a local directory or the server being imported from, and a redirect is
  followed only when it stays inside the repository;
- ``all``: those, and any other http(s) address, fetched (redirects followed);
- ``off``: none.

Every depiction is bounded: ``PKGCAT_DEPICTION_MAX_BYTES`` on the wire and on
disk, ``PKGCAT_DEPICTION_DEADLINE`` for its fetch, ``PKGCAT_DEPICTION_MAX_DEPTH``
for the nesting of its JSON; and every fetch obeys ``PKGCAT_FETCH_ALLOW``. A
depiction that cannot be read, is past a cap, or is not JSON leaves the record
without screenshots and is reported as a warning; it never stops an import.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal
from urllib.parse import urljoin

import orjson

from pkgcat.ingest.errors import IngestError
from pkgcat.ingest.fetch import Reader, below, get
from pkgcat.ingest.limits import ImportLimits
from pkgcat.ingest.text import control_in_line
from pkgcat.net.fetcher import Fetcher, follow_any

DepictionMode = Literal["repo", "all", "off"]
DEPICTION_MODES: tuple[DepictionMode, ...] = ("repo", "all", "off")
FETCHERS = 8
"""Depictions fetched at once over http(s)."""


class TooDeep(ValueError):
    """A depiction nested deeper than its limit."""


def _nodes(document: Any, depth: int) -> Iterator[Any]:
    """Every object and array of ``document``, walked without recursion; :class:`TooDeep` past ``depth``."""
    stack = [(document, 1)]
    while stack:
        node, level = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if level > depth:
            raise TooDeep(f"nested deeper than {depth} levels (PKGCAT_DEPICTION_MAX_DEPTH)")
        yield node
        children = node.values() if isinstance(node, dict) else node
        # Reversed onto the stack: the walk meets the views in document order.
        stack.extend((child, level + 1) for child in reversed(list(children)))


def screenshots_of(depiction: Any, address: str, depth: int = 64) -> tuple[str, ...]:
    """The screenshot addresses of a parsed depiction document (:class:`TooDeep` past ``depth``)."""
    found: dict[str, None] = {}
    for node in _nodes(depiction, depth):
        if not isinstance(node, dict) or node.get("class") != "DepictionScreenshotsView":
            continue
        ipad = node.get("ipad")
        for view in (node, ipad) if isinstance(ipad, dict) else (node,):
            shots = view.get("screenshots")
            for shot in shots if isinstance(shots, list) else ():
                url = shot.get("url") if isinstance(shot, dict) else None
                if not isinstance(url, str) or not url.strip() or control_in_line(url.strip()):
                    continue
                resolved = urljoin(address, url.strip())
                if resolved.startswith(("http://", "https://")):
                    found[resolved] = None
    return tuple(found)


class Depictions:
    """Reads depictions for one import, each address once."""

    def __init__(
        self,
        mode: DepictionMode,
        repository_url: str,
        reader: Reader,
        client: Fetcher,
        limits: ImportLimits | None = None,
    ) -> None:
        self.mode = mode
        self._base = repository_url if repository_url.endswith("/") else repository_url + "/"
        self._reader = reader
        self._client = client
        self._limits = limits or ImportLimits()
        self._cache: dict[str, tuple[str, ...]] = {}
        self.failures: list[str] = []
        self.outside: set[str] = set()
        """Depictions left unread because they are outside the repository (mode ``repo``)."""

    def _inside(self, address: str) -> str | None:
        """The depiction's path in the repository, or ``None`` when it is outside."""
        return below(self._base, address) if self._base != "/" else None

    def _read(self, address: str) -> tuple[str, ...]:
        budget = self._limits.depiction
        path = self._inside(address)
        try:
            if path is not None:
                data = self._reader.read(path, budget)
            else:
                data = get(self._client, address, budget, follow_any)
        except IngestError as error:
            self.failures.append(str(error))
            return ()
        if data is None:
            self.failures.append(f"{address}: not found")
            return ()
        try:
            return screenshots_of(orjson.loads(data), address, self._limits.depiction_depth)
        except orjson.JSONDecodeError as error:
            self.failures.append(f"{address}: not a JSON depiction ({error})")
        except TooDeep as error:
            self.failures.append(f"{address}: {error}")
        return ()

    def _wanted(self, address: str) -> bool:
        if self.mode == "off" or not address:
            return False
        if self._inside(address) is not None:
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
