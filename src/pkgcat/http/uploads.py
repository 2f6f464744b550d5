"""``POST /1.0/package/upload.json``: a .deb received, published, answered with its details.

The body is read as it comes, into a temporary file, hashed on the way and
refused as soon as it passes the size limit (a ``Content-Length`` over it is
refused before a byte is read). Two bodies are taken: the .deb itself
(``application/vnd.debian.binary-package``) and a multipart form whose part
``file`` holds it (parsed by python-multipart as it streams). Nothing is stored
until the whole file is here and :func:`~pkgcat.repository.publish.publish`
has checked it; the temporary file goes in every case, so an interrupted or
refused upload leaves nothing behind.

With an ``Idempotency-Key`` header the upload is done once per key
(:mod:`pkgcat.http.idempotency`): the key is claimed once the file is here and
before anything is published, and the same key with the same file gets the
first answer again (or, while the first is still publishing, a 409 to retry);
with another file it is refused (code 2 naming the header).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from zoneinfo import ZoneInfo

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.types import Receive

from pkgcat import models
from pkgcat.domain import Caller
from pkgcat.errors import InvalidArgument
from pkgcat.http.errors import envelope
from pkgcat.http.idempotency import idempotency_key, idempotent
from pkgcat.http.operations import BY_NAME, DEB, FORM
from pkgcat.repository.debs import Refused
from pkgcat.repository.uploads import Uploads
from pkgcat.services import CatalogueService
from pkgcat.storage.blobs import BlobMismatch

OPERATION = BY_NAME["package/upload"]
FORM_OVERHEAD = 64 * 1024
"""What a multipart form may hold besides the file (boundaries, headers, other fields)."""


@dataclass(frozen=True, slots=True)
class Incoming:
    """What an upload handler reads of its request besides the query: headers and body."""

    headers: list[tuple[bytes, bytes]]
    receive: Receive

    def header(self, name: bytes) -> bytes | None:
        """The first value of a header (lower-case ``name``), or None."""
        for key, value in self.headers:
            if key == name:
                return bytes(value)
        return None


@dataclass(frozen=True, slots=True)
class Received:
    path: Path
    sha256: str
    size: int


def _too_large(size: int | str, limit: int) -> InvalidArgument:
    return InvalidArgument("file", f"too large: {size} bytes, over the limit of {limit}")


class _Sink:
    """The file being received: written, hashed and measured as it comes."""

    def __init__(self, file: BinaryIO, limit: int) -> None:
        self._file = file
        self._digest = hashlib.sha256()
        self.size = 0
        self.limit = limit
        self.parts = 0

    def write(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.limit:
            raise _too_large(f"more than {self.limit}", self.limit)
        self._digest.update(data)
        self._file.write(data)

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()


class _FormFile:
    """python-multipart's callbacks: the part named ``file`` goes to ``sink`` (one such part)."""

    def __init__(self, sink: _Sink) -> None:
        self.sink = sink
        self.field = self.value = self.disposition = b""
        self.on = False

    def header_field(self, data: bytes, start: int, end: int) -> None:
        self.field += data[start:end]

    def header_value(self, data: bytes, start: int, end: int) -> None:
        self.value += data[start:end]

    def header_end(self) -> None:
        if self.field.lower() == b"content-disposition":
            self.disposition = self.value
        self.field = self.value = b""

    def headers_finished(self) -> None:
        _, options = parse_options_header(self.disposition)
        self.on = options.get(b"name") == b"file"
        self.disposition = b""
        if self.on:
            self.sink.parts += 1
            if self.sink.parts > 1:
                raise InvalidArgument("file", "the form holds more than one part named file")

    def part_data(self, data: bytes, start: int, end: int) -> None:
        if self.on:
            self.sink.write(data[start:end])

    def parser(self, boundary: bytes) -> MultipartParser:
        callbacks: dict[str, Callable[..., None]] = {
            "on_header_field": self.header_field,
            "on_header_value": self.header_value,
            "on_header_end": self.header_end,
            "on_headers_finished": self.headers_finished,
            "on_part_data": self.part_data,
        }
        return MultipartParser(boundary, callbacks)  # type: ignore[arg-type]  # a TypedDict there


def _parse(step: Callable[[bytes], object], chunk: bytes) -> None:
    """A step of the form's parser: a form it cannot read is the caller's error, not ours."""
    try:
        step(chunk)
    except MultipartParseError as error:
        raise InvalidArgument("file", f"the multipart form cannot be read: {error}") from None


async def receive_deb(incoming: Incoming, limit: int) -> Received:
    """The .deb of the request, in a temporary file the caller deletes; code 2 when unfit."""
    raw_type = incoming.header(b"content-type") or b""
    media, options = parse_options_header(raw_type)
    kind = media.decode("latin-1").lower()
    if kind not in (DEB, FORM):
        raise InvalidArgument(
            "Content-Type", f"must be {DEB} (the .deb itself) or {FORM} with a part named file"
        )
    length = incoming.header(b"content-length")
    budget = limit if kind == DEB else limit + FORM_OVERHEAD
    if length is not None and length.isdigit() and int(length) > budget:
        raise _too_large(int(length), limit)  # refused before a byte of it is read
    parser = None
    boundary = options.get(b"boundary") or b""
    if kind == FORM and not boundary:
        raise InvalidArgument("Content-Type", "a multipart form needs its boundary")
    handle, name = tempfile.mkstemp(prefix="pkgcat-upload-", suffix=".deb")
    path = Path(name)
    try:
        with os.fdopen(handle, "wb") as file:
            sink = _Sink(file, limit)
            if kind == FORM:
                parser = _FormFile(sink).parser(boundary)
            total = 0
            while True:
                message = await incoming.receive()
                if message["type"] == "http.disconnect":
                    raise InvalidArgument("file", "the upload was interrupted before its end")
                chunk: bytes = message.get("body", b"")
                total += len(chunk)
                if total > budget:
                    raise _too_large(f"more than {limit}", limit)
                if parser is None:
                    sink.write(chunk)
                elif chunk:
                    _parse(parser.write, chunk)
                if not message.get("more_body", False):
                    break
            if parser is not None:
                _parse(lambda _: parser.finalize(), b"")
                if sink.parts == 0:
                    raise InvalidArgument("file", "the form has no part named file")
        if sink.size == 0:
            raise InvalidArgument("file", "empty: send the .deb as the body")
        return Received(path, sink.sha256, sink.size)
    except BaseException:
        path.unlink(missing_ok=True)
        raise


async def upload(
    service: CatalogueService, uploads: Uploads, caller: Caller, incoming: Incoming
) -> bytes:
    """The handler: receive, publish, answer with the details (once per Idempotency-Key)."""
    key = idempotency_key(incoming)
    received = await receive_deb(incoming, uploads.max_bytes)

    async def work() -> bytes:
        try:
            published = await uploads.publish(received.path, caller.application.source_id)
        except (Refused, BlobMismatch) as error:
            # Raised in a thread, the refusal came back through the future that anyio's
            # run_sync awaited: its traceback holds that frame, the frame the future, the
            # future the refusal. Only the cyclic collector frees such a cycle, and a served
            # worker's runs seldom (pkgcat.app), so every frame of the reading stayed with
            # it. The answer needs the reason alone: without its traceback, the refusal and
            # all it held go now, by reference counting.
            error.__traceback__ = None
            raise InvalidArgument("file", str(error)) from None
        package = await service.published_details(published.package)
        return envelope(models.package_body(package, caller.shape, ZoneInfo(caller.timezone)))

    try:
        application = caller.application.id
        return await idempotent(
            uploads.answers, application, key, OPERATION.name, received.sha256, work
        )
    finally:
        received.path.unlink(missing_ok=True)
