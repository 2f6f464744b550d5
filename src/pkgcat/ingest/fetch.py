"""Reading the files of a repository from a local directory or an http(s) address, within caps.

Both readers answer ``None`` for a file that is not there (a missing file, an
HTTP 404 or 410), so the caller can try the next candidate the way APT does,
and raise :class:`~pkgcat.ingest.errors.FetchError` for anything else, or
:class:`~pkgcat.ingest.errors.LimitError` for a file past its cap or a fetch
past its deadline (the message names the setting). Addresses are fetched by
:class:`pkgcat.net.fetcher.Fetcher`: no request reaches a loopback, private,
link-local or metadata address unless ``PKGCAT_FETCH_ALLOW`` allows it.

A path given to a reader never leads out of its repository: on disk it must
stay under the directory, and over http(s) the address it makes, normalised
(``.`` and ``..`` resolved, repeated ``/`` collapsed), must stay on the
repository's host and under its path (:func:`below`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Protocol

import httpx

from pkgcat import __version__
from pkgcat.ingest.errors import FetchError, LimitError
from pkgcat.ingest.limits import Budget
from pkgcat.net.errors import DeadlineExceeded, OutboundError, TooLarge
from pkgcat.net.fetcher import Fetcher, Follow, Policy, follow_any

USER_AGENT = f"pkgcat/{__version__} (catalogue import)"


def is_address(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def fetcher(policy: Policy) -> Fetcher:
    """The fetcher an import reads addresses with."""
    return Fetcher(replace(policy, user_agent=USER_AGENT))


def _clean(path: str) -> str:
    """A URL path with ``.`` and ``..`` resolved and empty segments dropped (a ``/`` at the end kept)."""
    parts: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if parts:
                parts.pop()
        elif segment not in ("", "."):
            parts.append(segment)
    tail = "/" if path.endswith("/") and parts else ""
    return "/" + "/".join(parts) + tail


def below(base: str, address: str) -> str | None:
    """``address`` relative to the repository ``base``, normalised; ``None`` when outside it.

    Inside means http or https (either: a repository is often served by both), the
    same host and port, and a path under the repository's, once both are normalised.
    The query, if any, is kept.
    """
    try:
        root, url = httpx.URL(base), httpx.URL(address)
    except httpx.InvalidURL:
        return None
    if url.scheme not in ("http", "https") or (url.host, url.port) != (root.host, root.port):
        return None
    prefix = _clean(root.path).rstrip("/") + "/"
    path = _clean(url.path)
    if not path.startswith(prefix):
        return None
    query = url.query.decode("ascii")
    return path[len(prefix) :] + (f"?{query}" if query else "")


class Reader(Protocol):
    """Files of one repository, by path relative to its root."""

    @property
    def root(self) -> str:
        """The directory or address the paths are relative to."""
        ...

    def read(self, path: str, budget: Budget) -> bytes | None:
        """The file's bytes, or ``None`` when it does not exist."""
        ...


class DirectoryReader:
    """A repository on disk."""

    def __init__(self, root: Path) -> None:
        self._root = root.resolve()

    @property
    def root(self) -> str:
        return str(self._root)

    def read(self, path: str, budget: Budget) -> bytes | None:
        target = (self._root / path.partition("?")[0].lstrip("/")).resolve()
        # Paths come from the Release and the index: they must not lead out of the repository.
        if not target.is_relative_to(self._root):
            raise FetchError(f"{path}: leads outside the repository {self._root}")
        if not target.is_file():
            return None
        limit = budget.limits.max_bytes
        try:
            with target.open("rb") as file:
                data = file.read(limit + 1)
        except OSError as error:
            raise FetchError(f"{target}: cannot be read ({error.strerror})") from None
        if len(data) > limit:
            raise LimitError(f"{target}: more than {limit} bytes ({budget.size_setting})")
        return data


class HttpReader:
    """A repository served over http(s)."""

    def __init__(self, base_url: str, client: Fetcher) -> None:
        self._base = base_url if base_url.endswith("/") else base_url + "/"
        self._client = client

    @property
    def root(self) -> str:
        return self._base

    def _inside(self, url: httpx.URL) -> bool:
        return below(self._base, str(url)) is not None

    def read(self, path: str, budget: Budget) -> bytes | None:
        url = self._base + path.lstrip("/")
        if below(self._base, url) is None:
            raise FetchError(f"{path}: leads outside the repository {self._base}")
        return get(self._client, url, budget, follow_any if budget.anywhere else self._inside)


def get(client: Fetcher, url: str, budget: Budget, follow: Follow | None) -> bytes | None:
    """GET ``url``: its body, ``None`` for 404 and 410, :class:`FetchError` otherwise."""
    try:
        answer = client.get(url, limits=budget.limits, follow=follow)
    except TooLarge as error:
        raise LimitError(f"{error} ({budget.size_setting})") from None
    except DeadlineExceeded as error:
        raise LimitError(f"{error} ({budget.deadline_setting})") from None
    except OutboundError as error:
        raise FetchError(str(error)) from None
    if answer.status in (404, 410):
        return None
    if answer.status != 200:
        raise FetchError(f"{url}: the server answered HTTP {answer.status}")
    return answer.content
