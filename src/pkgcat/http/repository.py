"""The served APT repository under ``/repo/``: indexes, depictions, the icon, and .deb files.

A plain ASGI app (mounted by the site), kept off Starlette's request objects:
an index is a lookup in the worker's prebuilt set (bytes in memory, with the
headers of its answers made at its build), so a request costs a dict lookup and
two messages. A large index (``Packages``) is also a file of the index directory
(:mod:`pkgcat.repository.ondisk`), which a server offering ``http.response.pathsend``
sends from disk, as it sends static files.

Paths, under ``/repo/`` (the whole catalogue) and ``/repo/sources/NAME/`` (one
source's packages): ``Packages[.gz|.xz|.bz2|.zst]``, ``Release``, ``InRelease``,
``Release.gpg``, ``by-hash/ALGORITHM/DIGEST``, ``CydiaIcon.png``, ``key.asc``
(the public signing keys), ``payment_endpoint`` (the store's address, when the
store is on), ``depictions/PACKAGE.json`` (Sileo), and the files,
``pool/ab/DIGEST/NAME.deb``.

A .deb of a free package is served to anyone, with Range requests (apt
resumes), streamed; with ``zero_copy`` (``PKGCAT_DOWNLOAD_ZERO_COPY``) a whole
file of the directory store is sent by the server itself from the file
(``http.response.pathsend`` where the server offers it). A paid package's
file needs a signed download URL (:mod:`pkgcat.repository.grants`), claimed by
the first client that GETs it: 402 without one, 403 for one that is not this
server's for this file, 410 once expired, claimed by another client, or once its
file has gone out whole. The claiming client may ask again (apt resumes a cut
download with a Range request) until then; a HEAD claims nothing. Each whole
download is reported to ``on_download`` (counted per package and day), before
its last byte goes out.

A download that could not be counted, or whose file the store cannot give, is refused
before its first byte: ``503`` with ``Retry-After``, a failed fetch the client tries again,
where a 200 cut short left it a partial file. Before a whole download starts,
``reachable`` waits for the database to take a commit of the counts (it joins their group
commit: the downloads that start together cost one round trip), and the file's first chunk
is read from the store; each within the request deadline. An outage is logged once
(:class:`~pkgcat.outages.Outage`), not once a download, and never with a trace
(docs/repository.md, "Counted downloads", says why this check and not a count taken back).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from email.utils import parsedate_to_datetime
from importlib.resources import files
from pathlib import Path
from urllib.parse import parse_qsl, unquote

import anyio
from starlette.types import Receive, Scope, Send

from pkgcat.http.asgi import matches
from pkgcat.outages import Outage
from pkgcat.repository.grants import Grant, GrantRefused, Grants
from pkgcat.repository.indexes import IMMUTABLE, IndexFile, IndexSet, PoolEntry, entity_tag
from pkgcat.repository.served import PACKAGES_NAMES, SIGNED_NAMES, ServedRepository
from pkgcat.storage.blobs import BlobsUnavailable
from pkgcat.storage.store import device_owns

log = logging.getLogger("pkgcat.repository")

DEB = "application/vnd.debian.binary-package"
_POOL = re.compile(r"pool/([0-9a-f]{2})/([0-9a-f]{64})/([^/]+\.deb)")
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")
_MEDIA = re.compile(r"([0-9a-f]{64})\.(png|jpg)")
_BY_HASH = re.compile(r"by-hash/(MD5Sum|SHA1|SHA256|SHA512)/[0-9a-f]{32,128}")

REDIRECT_SECONDS = 300
"""How long a download's presigned address lasts (apt fetches it at once)."""

ClientOf = Callable[[Scope], str]
"""The client a request comes from (its address, as the failed-authentication throttle
reads it: behind trusted proxies, the address they forward)."""

DownloadHook = Callable[[PoolEntry, int], Awaitable[None]]
"""Told of each whole download (see :meth:`RepositoryApp._deb`) with 1, awaited before it
completes, and with -1 when a file counted before it went out failed to go; raises when
the download could not be counted."""


Reachable = Callable[[], Awaitable[None]]
"""Returns once the database can take a download's count; raises when it cannot."""


async def ignore_download(_entry: PoolEntry, _count: int) -> None:
    """A hook that records nothing (a repository served without counting)."""


async def always_reachable() -> None:
    """A database that is never asked (a repository served without counting)."""


def never_unavailable(_error: Exception) -> bool:
    return False


def peer(scope: Scope) -> str:
    """The address the connection comes from (no proxy trusted)."""
    client = scope.get("client")
    return str(client[0]) if client else ""


def _icon() -> bytes:
    return files("pkgcat.repository").joinpath("CydiaIcon.png").read_bytes()


class RepositoryApp:
    """ASGI app of the repository; mounted at ``/repo``."""

    def __init__(
        self,
        served: ServedRepository,
        on_download: DownloadHook = ignore_download,
        *,
        zero_copy: bool = False,
        redirect: bool = False,
        payment_endpoint: str | None = None,
        cydia_gate: bool = False,
        client: ClientOf = peer,
        reachable: Reachable = always_reachable,
        unavailable: Callable[[Exception], bool] = never_unavailable,
        deadline: float = 5.0,
    ) -> None:
        """``zero_copy``: send whole files of the directory store from disk in one message,
        counted before they go (:meth:`_send_file`); ``redirect``: answer a whole download
        of a free file of the S3 store with a redirect to its object, presigned for
        :data:`REDIRECT_SECONDS`, counted when redirected; ``payment_endpoint``: the store's
        address, served as ``payment_endpoint``; ``cydia_gate``: also serve a paid file to a
        device its headers say bought it; ``client``: whom a request comes from, which a
        download URL's claim is bound to; ``reachable``: asked before a whole download
        starts; ``unavailable``: whether an error means the database is unreachable or
        locked for now (:func:`pkgcat.storage.backends.database_unavailable`), then 503;
        ``deadline``: the seconds a download may wait for the database or the store before
        its first byte (``PKGCAT_REQUEST_DEADLINE``)."""
        self.served = served
        self._client = client
        self._payment_endpoint = payment_endpoint
        self._cydia_gate = cydia_gate
        self.on_download = on_download
        self.zero_copy = zero_copy
        self.redirect = redirect
        self.reachable = reachable
        self._unavailable = unavailable
        self._deadline = deadline
        self.database = Outage("downloads cannot be counted", "downloads are counted again", log)
        self.store = Outage(
            "downloads cannot be read from the store", "downloads are read again", log
        )
        icon = _icon()
        self._icon = IndexFile(icon, "image/png", entity_tag(icon), _EPOCH)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        method = scope["method"]
        if method not in ("GET", "HEAD"):
            await _plain(send, 405, "only GET and HEAD here", [(b"allow", b"GET, HEAD")])
            return
        root = scope.get("root_path", "")
        path: str = scope["path"]
        # apt asks for ``./InRelease`` of a flat repository: dot segments are dropped.
        parts = unquote(path[len(root) :] if path.startswith(root) else path).split("/")
        if ".." in parts:
            await _plain(send, 404, "not found")
            return
        relative = "/".join(part for part in parts if part not in ("", "."))
        canonical = f"{root}/{relative}"
        if relative == "":
            await _plain(send, 200, _sources_line(scope, root))
            return
        prefix, rest = "", relative
        if relative.startswith("sources/"):
            name, _, rest = relative.removeprefix("sources/").partition("/")
            prefix = f"sources/{name}/"
        try:
            # A Release or a Packages file: the newest published, never one older than
            # another worker of this host answered with before.
            published = rest in SIGNED_NAMES or rest in PACKAGES_NAMES
            served = await (self.served.newest() if published else self.served.current())
        except Exception as error:
            # No index set yet, and the first build failed: nothing to serve.
            if self._unavailable(error) or isinstance(error, (BlobsUnavailable, TimeoutError)):
                self.served.outage.failed(type(error).__name__)
            else:
                log.exception("the repository's indexes could not be built")
            await _plain(
                send,
                503,
                "the repository is not available; retry shortly",
                [(b"retry-after", b"1")],
            )
            return
        if prefix and f"{prefix}Release" not in served.files:
            await _plain(send, 404, f"no repository of a source named {prefix[8:-1]!r} here")
            return
        headers = dict(scope["headers"])
        if rest == "payment_endpoint" and self._payment_endpoint is not None:
            # Sileo reads one line: the base address of the payment provider (the store).
            await _plain(send, 200, self._payment_endpoint)
            return
        if rest == "CydiaIcon.png":
            await _index(send, method, headers, self._icon, False)
            return
        found = served.files.get(prefix + rest) if not rest.startswith("depictions/") else None
        if found is None and rest.startswith("depictions/"):
            found = served.files.get(rest)
        if found is not None:
            from_disk = "http.response.pathsend" in scope.get("extensions", {})
            await _index(send, method, headers, found, from_disk)
            return
        if _BY_HASH.fullmatch(rest):
            await self._by_hash(send, method, prefix + rest)
            return
        if rest.startswith("media/") and not prefix:
            await self._media(send, method, rest.removeprefix("media/"), served)
            return
        pool = _POOL.fullmatch(rest)
        entry = _entry(served, pool, prefix)
        if entry is None:
            await _plain(send, 404, f"not found: /{relative}")
            return
        count = None
        if entry.paid or entry.hidden:
            # A withdrawn version (or one above the version served) is kept for the buyers
            # who own the package: through a download URL only, which the store makes for them.
            query = dict(parse_qsl(scope["query_string"].decode("latin-1")))
            try:
                refusal, count = await self._authorize(canonical, query, scope, headers)
                if refusal is not None and "grant" not in query and self._cydia_gate:
                    refusal = await self._cydia(headers, entry, refusal)
            except Exception as error:
                if not self._unavailable(error):
                    raise
                await self._refuse(send, self.database, type(error).__name__)
                return
            if refusal is not None:
                await _plain(send, *refusal)
                return
        await self._deb(scope, receive, send, entry, headers, count)

    async def _media(self, send: Send, method: str, name: str, served: IndexSet) -> None:
        """An uploaded image a page names (``DIGEST.png``), from the blob store: immutable
        under its digest, its type fixed by its name (it was re-encoded as that type)."""
        found = _MEDIA.fullmatch(name)
        if found is None or name not in served.media:
            await _plain(send, 404, f"not found: /media/{name}")
            return
        try:
            body = b"".join([chunk async for chunk in self.served.blobs.read(found[1])])
        except FileNotFoundError:
            await _plain(send, 404, f"not found: /media/{name}")
            return
        except BlobsUnavailable as error:
            await self._refuse(send, self.store, str(error))
            return
        kind = b"image/png" if found[2] == "png" else b"image/jpeg"
        headers = [
            (b"content-type", kind),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", IMMUTABLE.encode()),
            (b"etag", f'"{found[1]}"'.encode()),
            # (X-Content-Type-Options: nosniff is the site's, on every answer.)
            (b"content-security-policy", b"default-src 'none'"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})

    async def _by_hash(self, send: Send, method: str, name: str) -> None:
        """A by-hash index another worker or host published (its Release names it) and this
        one does not hold: from the blob store, as published."""
        try:
            found = await self.served.by_hash(name)
            if found is None:
                await _plain(send, 404, f"not found: /{name}")
                return
            named, chunks = found
            first: list[bytes] = []
            if method == "GET":
                await _first(chunks, first)  # the store's failure is a 503, before any byte
        except Exception as error:
            if not (self._unavailable(error) or isinstance(error, BlobsUnavailable)):
                raise
            await self._refuse(send, self.served.outage, type(error).__name__)
            return
        self.served.outage.worked()
        headers = [
            (b"content-type", named.media_type.encode()),
            (b"content-length", str(named.size).encode()),
            (b"cache-control", IMMUTABLE.encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if method == "HEAD":
            await send({"type": "http.response.body", "body": b""})
            return
        for chunk in first:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        async for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    async def _refuse(self, send: Send, outage: Outage, reason: str) -> None:
        """503 with ``Retry-After``, before any byte of the file; the outage told once."""
        outage.failed(reason)
        what = "counted" if outage is self.database else "read from the store"
        await _plain(
            send,
            503,
            f"this download cannot be {what} now; retry shortly",
            [(b"retry-after", b"1")],
        )

    async def _before(
        self, send: Send, step: Awaitable[object], outage: Outage, *, bounded: bool = True
    ) -> bool:
        """Await ``step`` before the response starts, within the deadline when ``bounded``
        (a count is not: cancelled once sent, it could land for a download refused); False
        when it failed for an outage, answered 503. Any other error is raised."""
        try:
            async with asyncio.timeout(self._deadline if bounded else None):
                await step
        except TimeoutError:
            await self._refuse(send, outage, f"no answer within {self._deadline:g} s")
            return False
        except BlobsUnavailable as error:
            await self._refuse(send, self.store, str(error))
            return False
        except Exception as error:
            if outage is not self.database or not self._unavailable(error):
                raise
            await self._refuse(send, outage, type(error).__name__)
            return False
        outage.worked()
        return True

    async def _authorize(
        self, path: str, query: dict[str, str], scope: Scope, headers: dict[bytes, bytes]
    ) -> tuple[tuple[int, str] | None, DownloadHook | None]:
        """(None, the download's counting hook) when a paid file may be sent, else
        ((status, reason), None). A GET claims the URL for its client, or is that client's
        again (a resume); a HEAD only looks."""
        grants = await self.served.grants()
        if grants is None:
            return (402, "a paid package: downloads of paid packages are not enabled here"), None
        try:
            grant = grants.check(path, query, self.served.now())
        except GrantRefused as refused:
            status = (
                402
                if "needs a download URL" in str(refused)
                else 410
                if "expired" in str(refused)
                else 403
            )
            return (status, str(refused)), None
        client = self._client(scope)
        agent = headers.get(b"user-agent", b"").decode("latin-1")
        if scope["method"] == "HEAD":
            state = await self.served.peek(grants, grant, client, agent)
        else:
            state = await self.served.claim(grants, grant, client, agent)
        if state == "spent":
            return (
                410,
                "this download URL has been used already; ask for a new one (a cut download "
                "is resumed only by the client that began it: the same address and User-Agent)",
            ), None
        return None, self._once(grants, grant)

    def _once(self, grants: Grants, grant: Grant) -> DownloadHook:
        """The counting hook of a download URL's file: the grant is marked done before the
        download is counted, so a file resumed and sent whole twice counts once, and the
        second is refused (:class:`GrantRefused`); the mark is taken back with the count."""

        async def count(entry: PoolEntry, n: int) -> None:
            if n < 0:
                await self.on_download(entry, n)
                await self.served.unfinish(grants, grant)
                return
            if not await self.served.finish(grants, grant):
                raise GrantRefused("this download URL's file has gone out whole already")
            try:
                await self.on_download(entry, n)
            except BaseException:
                await asyncio.shield(self.served.unfinish(grants, grant))
                raise

        return count

    async def _cydia(
        self, headers: dict[bytes, bytes], entry: PoolEntry, refusal: tuple[int, str]
    ) -> tuple[int, str] | None:
        """Cydia's gate: the device's own headers against the purchases. Forgeable by anyone
        who knows a buyer's UDID, hence off unless ``PKGCAT_STORE_CYDIA_GATE`` is set."""
        udid = headers.get(b"x-unique-id", b"").decode("latin-1")
        machine = headers.get(b"x-machine", b"").decode("latin-1")
        if not udid or not machine or len(udid) > 64 or len(machine) > 64:
            return refusal
        owned = await anyio.to_thread.run_sync(
            device_owns, self.served.engine(), udid, machine, entry.package
        )
        return None if owned else (403, "this device has not bought this package")

    async def _deb(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        entry: PoolEntry,
        headers: dict[bytes, bytes],
        count: DownloadHook | None = None,
    ) -> None:
        """The file, whole or one byte range; a whole download reported before it is complete.

        A whole download is a GET answered 200, or a range that ends at the
        file's last byte (where a resumed download ends). Its count is
        committed once every byte but the last has been handed to the server,
        and only then is the last byte sent: a client never holds the whole file
        while its count could still be lost, and a send that failed before is
        never counted. The one exception, with ``zero_copy``, is the send of a
        whole file of the directory store from disk (``http.response.pathsend``),
        which the server takes in one message: it is counted before, and the
        count taken back if the send fails (:meth:`_send_file`); a server that
        takes the file and then loses the client says nothing, so such a cut
        download stays counted.

        ``count`` reports the whole download (``on_download`` unless given: a download
        URL's, which counts its file once).
        """
        count = count or self.on_download
        cache = "private, no-store" if entry.paid or entry.hidden else IMMUTABLE
        size = entry.size
        start, end, status = 0, size, 200
        # An If-Range (apt sends its partial file's date) always holds: the file at a pool
        # path never changes, its name holds its digest; so a range is answered as asked.
        wanted = headers.get(b"range")
        if wanted is not None:
            parsed = _range(wanted.decode("latin-1"), size)
            if parsed is None:
                await _plain(
                    send,
                    416,
                    "range not satisfiable",
                    [(b"content-range", f"bytes */{size}".encode())],
                )
                return
            if parsed != (0, size):
                start, end, status = *parsed, 206
        out = [
            (b"content-type", DEB.encode()),
            (b"content-length", str(end - start).encode()),
            (b"accept-ranges", b"bytes"),
            (b"etag", f'"{entry.sha256}"'.encode()),
            (b"cache-control", cache.encode()),
        ]
        if status == 206:
            out.append((b"content-range", f"bytes {start}-{end - 1}/{size}".encode()))
        if scope["method"] == "HEAD":
            await send({"type": "http.response.start", "status": status, "headers": out})
            await send({"type": "http.response.body", "body": b""})
            return
        if self.redirect and status == 200 and not (entry.paid or entry.hidden):
            # A paid file is never redirected: its address could be used again while it
            # lasts, where its download URL is good for one download.
            url = await self.served.blobs.signed_url(entry.sha256, REDIRECT_SECONDS)
            if url is not None:
                await self._redirect(send, entry, url, count)
                return
        zero_copy = (
            self.zero_copy
            and status == 200
            and "http.response.pathsend" in scope.get("extensions", {})
        )
        local = self.served.blobs.local_path(entry.sha256) if zero_copy else None
        if local is not None:
            await self._send_file(send, entry, out, local, count)
            return
        if end == size and not await self._before(send, self.reachable(), self.database):
            return  # its count could not be written: refused before its first byte
        chunks = self.served.blobs.read(entry.sha256, start, end)
        async with contextlib.aclosing(chunks), _Watch(receive) as client:
            # The first chunk before the first byte: a store that cannot give it is a 503.
            first: list[bytes] = []
            if not await self._before(send, _first(chunks, first), self.store):
                return
            await send({"type": "http.response.start", "status": status, "headers": out})
            held = first[0] if first else b""
            try:
                async for chunk in chunks:
                    if held:
                        await send({"type": "http.response.body", "body": held, "more_body": True})
                    held = chunk
            except BlobsUnavailable as error:  # the store went away mid-file: cut short
                self.store.failed(str(error))
                return
            if end == size and held:
                # Every byte but the last has gone out: count, then complete the file. A
                # failed commit ends the response short, so the client asks again.
                await send({"type": "http.response.body", "body": held[:-1], "more_body": True})
                if not await client.gone():
                    try:
                        await count(entry, 1)
                    except GrantRefused as refused:
                        log.warning("a paid download ended one byte short: %s", refused)
                        return
                    except Exception as error:
                        if not self._unavailable(error):
                            raise
                        # The database went away during the download: one byte short.
                        self.database.failed(type(error).__name__)
                        return
                held = held[-1:]
            await send({"type": "http.response.body", "body": held})

    async def _redirect(self, send: Send, entry: PoolEntry, url: str, count: DownloadHook) -> None:
        """A whole download sent to the object's presigned address, counted when redirected
        (taken back when the redirect cannot be sent): whether the client then fetches the
        object is not known here."""
        if not await self._before(send, count(entry, 1), self.database, bounded=False):
            return
        sent = False
        try:
            headers = [
                (b"location", url.encode()),
                (b"content-length", b"0"),
                (b"cache-control", b"no-store"),  # the address expires
            ]
            await send({"type": "http.response.start", "status": 302, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            sent = True
        finally:
            if not sent:
                await asyncio.shield(count(entry, -1))

    async def _send_file(
        self,
        send: Send,
        entry: PoolEntry,
        headers: list[tuple[bytes, bytes]],
        path: Path,
        count: DownloadHook,
    ) -> None:
        """A whole file in one message the server sends from disk (zero copy), counted first.

        The server takes the file whole, so nothing can be held back: the count is
        committed before the file goes, and taken back when the send fails. Whether
        the client stays to the end is not watched (a task per download, for a
        server that would not tell of a client that left later anyway): a download
        handed to the server is counted.
        """
        try:
            if not await self._before(send, count(entry, 1), self.database, bounded=False):
                return
        except GrantRefused as refused:  # its download URL's file went out whole meanwhile
            await _plain(send, 410, str(refused))
            return
        sent = False
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.pathsend", "path": str(path)})
            sent = True
        finally:
            if not sent:
                await asyncio.shield(count(entry, -1))


async def _first(chunks: AsyncIterator[bytes], into: list[bytes]) -> None:
    """The first chunk of ``chunks`` into ``into`` (nothing when there is none)."""
    async for chunk in chunks:
        into.append(chunk)
        return


class _Watch:
    """Whether the client has gone: a server may take body messages for a closed
    connection without a word, and say so only through ``receive``."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _Watch:
        self._task = asyncio.get_running_loop().create_task(self._watch())
        return self

    async def _watch(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass

    async def gone(self) -> bool:
        await asyncio.sleep(0)  # let a disconnect already told be read
        task = self._task
        # A receive that failed tells nothing: only a disconnect said is gone.
        return task is not None and task.done() and not task.cancelled() and not task.exception()

    async def __aexit__(self, *_exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


_EPOCH = parsedate_to_datetime("Thu, 01 Jan 1970 00:00:00 GMT")


def _entry(served: IndexSet, pool: re.Match[str] | None, prefix: str) -> PoolEntry | None:
    """The served file a pool path names; only under its own source's repository or the whole one."""
    if pool is None:
        return None
    entry = served.pool.get(pool[2])
    if entry is None or pool[1] != entry.sha256[:2]:
        return None
    if prefix and prefix != f"sources/{entry.source}/":
        return None
    plain = entry.version.partition(":")[2] or entry.version
    if pool[3] != f"{entry.package}_{plain}_{entry.architecture}.deb":
        return None
    return entry


def _range(header: str, size: int) -> tuple[int, int] | None:
    """One ``bytes=`` range as (start, end exclusive); the whole file for a form not handled;
    None when it cannot be satisfied (RFC 9110 14.1.2)."""
    found = _RANGE.fullmatch(header.strip())
    if found is None or (not found[1] and not found[2]):
        return 0, size  # several ranges, or another unit: the whole file, as 200
    if not found[1]:
        suffix = int(found[2])
        return (max(size - suffix, 0), size) if suffix else None
    start = int(found[1])
    end = min(int(found[2]) + 1, size) if found[2] else size
    if start >= size or end <= start:
        return None
    return start, end


def _sources_line(scope: Scope, root: str) -> str:
    host = dict(scope["headers"]).get(b"host", b"HOST").decode("latin-1")
    scheme = scope.get("scheme", "http")
    base = f"{scheme}://{host}{root}/"
    return (
        "pkgcat APT repository\n\n"
        f"Whole catalogue:  deb [signed-by=/etc/apt/keyrings/pkgcat.asc] {base} ./\n"
        f"One source:       deb [signed-by=/etc/apt/keyrings/pkgcat.asc] {base}sources/NAME/ ./\n"
        f"Signing keys:     {base}key.asc\n"
    )


async def _plain(
    send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = (text + "\n").encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _not_modified(headers: dict[bytes, bytes], index: IndexFile) -> bool:
    """RFC 9110 13.1: If-None-Match decides when given; else If-Modified-Since (seconds)."""
    if_none_match = headers.get(b"if-none-match")
    if if_none_match is not None:
        return matches(if_none_match, index.tag)
    since = headers.get(b"if-modified-since")
    if since is None:
        return False
    try:
        when = parsedate_to_datetime(since.decode("latin-1"))
    except (TypeError, ValueError):
        return False
    return when.tzinfo is not None and index.since <= int(when.timestamp())


async def _index(
    send: Send, method: str, headers: dict[bytes, bytes], index: IndexFile, from_disk: bool
) -> None:
    """An index: 304, or 200 with its headers made at its build; its body from its file on
    disk (sent by the server) when ``from_disk`` and the file is there, else from memory."""
    if _not_modified(headers, index):
        await send({"type": "http.response.start", "status": 304, "headers": [*index.unchanged]})
        await send({"type": "http.response.body", "body": b""})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [*index.headers]})
    if method == "HEAD":
        await send({"type": "http.response.body", "body": b""})
    elif from_disk and index.path is not None and _is_file(index.path):
        await send({"type": "http.response.pathsend", "path": index.path})
    else:
        await send({"type": "http.response.body", "body": index.body})


def _is_file(path: str) -> bool:
    """Whether the file is there (a stat: a microsecond, against milliseconds to send it)."""
    try:
        return os.stat(path).st_size >= 0
    except OSError:
        return False
