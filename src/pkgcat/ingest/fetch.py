"""Reading the files of a repository from a local directory or an http(s) address.

Both readers answer ``None`` for a file that is not there (a missing file, an
HTTP 404 or 410), so the caller can try the next candidate the way APT does,
and raise :class:`~pkgcat.ingest.errors.FetchError` for anything else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol
from urllib.parse import urljoin

import httpx

from pkgcat import __version__
from pkgcat.ingest.errors import FetchError

TIMEOUT = httpx.Timeout(30.0, connect=10.0)
USER_AGENT = f"pkgcat/{__version__} (catalogue import)"


def is_address(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def http_client() -> httpx.Client:
    """The client an import reads addresses with (redirects followed, as APT does)."""
    return httpx.Client(timeout=TIMEOUT, follow_redirects=True, headers={"User-Agent": USER_AGENT})


class Reader(Protocol):
    """Files of one repository, by path relative to its root."""

    @property
    def root(self) -> str:
        """The directory or address the paths are relative to."""
        ...

    def read(self, path: str) -> bytes | None:
        """The file's bytes, or ``None`` when it does not exist."""
        ...


class DirectoryReader:
    """A repository on disk."""

    def __init__(self, root: Path) -> None:
        self._root = root.resolve()

    @property
    def root(self) -> str:
        return str(self._root)

    def read(self, path: str) -> bytes | None:
        target = (self._root / path).resolve()
        # Paths come from the Release and the index: they must not lead out of the repository.
        if not target.is_relative_to(self._root):
            raise FetchError(f"{path}: leads outside the repository {self._root}")
        if not target.is_file():
            return None
        try:
            return target.read_bytes()
        except OSError as error:
            raise FetchError(f"{target}: cannot be read ({error.strerror})") from None


class HttpReader:
    """A repository served over http(s)."""

    def __init__(self, base_url: str, client: httpx.Client) -> None:
        self._base = base_url if base_url.endswith("/") else base_url + "/"
        self._client = client

    @property
    def root(self) -> str:
        return self._base

    def read(self, path: str) -> bytes | None:
        return get(self._client, urljoin(self._base, path))


def get(client: httpx.Client, url: str) -> bytes | None:
    """GET ``url``: its body, ``None`` for 404 and 410, :class:`FetchError` otherwise."""
    try:
        response = client.get(url)
    except httpx.HTTPError as error:
        raise FetchError(f"{url}: cannot be fetched ({error or type(error).__name__})") from None
    if response.status_code in (404, 410):
        return None
    if response.status_code != 200:
        raise FetchError(f"{url}: the server answered HTTP {response.status_code}")
    return response.content
