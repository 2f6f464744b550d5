"""`Client.upload`, `AsyncClient.upload` and `pkgcat client upload`: on a double for what goes
on the wire and its retries, and on our app in-process for the answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from pkgcat.client import (
    AsyncClient,
    Client,
    InvalidArgumentError,
    PermissionDeniedError,
    RequestInProgressError,
)
from pkgcat.storage.admin import CatalogueAdmin
from tests.client.conftest import BASE, KEY, Double, InProcess, Waits, answer, invoke, recorded
from tests.conftest import AppFactory
from tests.debs import build_deb

DETAILS = recorded("details_a")["response"]
DEB = "application/vnd.debian.binary-package"
BODY = b"!<arch>\n" + bytes(range(256)) * 2048  # half a MiB: several chunks on the wire


def test_every_attempt_sends_the_same_idempotency_key_and_the_file(waits: Waits) -> None:
    double = Double(answer(15, "down", status=503), answer(0, DETAILS))
    sent: list[int] = []
    with Client(BASE, KEY, transport=double.transport, sleep=waits) as client:
        package = client.upload(BODY, progress=sent.append)
    assert package.package == DETAILS["package"]
    first, second = double.requests
    for request in (first, second):
        assert request.method == "POST"
        assert request.url.path == "/1.0/package/upload.json"
        assert request.headers["content-type"] == DEB
        assert request.content == BODY
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"]
    assert first.headers["idempotency-key"].startswith("pkgcat-client-")
    assert sum(sent) == 2 * len(BODY)  # both attempts, chunk by chunk
    assert len(waits) == 1


def test_a_code_16_is_waited_out_for_its_retry_after_and_asked_again(waits: Waits) -> None:
    """The server's answer to a retry that meets its first attempt still publishing
    (http/idempotency.py): 409, code 16, ``Retry-After: 1``; the same key again gets the answer."""
    busy = answer(
        16, "Idempotency-Key: still in progress", status=409, headers={"retry-after": "1"}
    )
    double = Double(busy, answer(0, DETAILS))
    with Client(BASE, KEY, transport=double.transport, sleep=waits) as client:
        assert client.upload(BODY).package == DETAILS["package"]
    first, second = double.requests
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"]
    assert waits == [1.0]
    with (
        Client(BASE, KEY, transport=Double(busy).transport, sleep=waits, max_retries=1) as client,
        pytest.raises(RequestInProgressError) as raised,
    ):
        client.upload(BODY)
    assert (raised.value.code, raised.value.status, raised.value.retry_after) == (16, 409, 1.0)


def test_a_given_key_and_a_path_are_sent_as_given(waits: Waits, tmp_path: Path) -> None:
    path = tmp_path / "tool.deb"
    path.write_bytes(BODY)
    double = Double(answer(0, DETAILS))
    with Client(BASE, KEY, transport=double.transport, sleep=waits) as client:
        client.upload(path, idempotency_key="release-1.2")
    (request,) = double.requests
    assert request.headers["idempotency-key"] == "release-1.2"
    assert request.content == BODY
    with pytest.raises(ValueError, match="idempotency_key"):
        Client(BASE, KEY, transport=double.transport).upload(BODY, idempotency_key="has space")


def test_the_async_client_retries_with_the_same_key(waits: Waits) -> None:
    double = Double(answer(15, "down", status=503), answer(0, DETAILS))

    async def go() -> str:
        async with AsyncClient(BASE, KEY, transport=double.transport, sleep=waits.asleep) as c:
            return (await c.upload(BODY)).package

    assert asyncio.run(go()) == DETAILS["package"]
    first, second = double.requests
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"]
    assert second.content == BODY


@pytest.fixture
def publishing(
    make_api: AppFactory, admin: CatalogueAdmin, tmp_path: Path
) -> tuple[Client, Client]:
    """A client of our app with a publish key, and one with a read key."""
    api = make_api(blob_dir=str(tmp_path / "blobs"))
    granted = admin.create_key("Alpha", "alpha-a", ("publish",)).secret_key
    return (
        Client(BASE, granted, transport=InProcess(api.http), max_retries=0),
        Client(BASE, api.keys["alpha-a"], transport=InProcess(api.http), max_retries=0),
    )


def test_our_server_answers_the_details_code_9_and_refusals(
    publishing: tuple[Client, Client], tmp_path: Path
) -> None:
    writer, reader = publishing
    deb = build_deb(tmp_path, "com.alpha.sdk", "4.2")
    assert (writer.upload(deb).package, writer.upload(deb).version) == ("com.alpha.sdk", "4.2")
    with pytest.raises(PermissionDeniedError) as denied:
        reader.upload(deb)
    assert denied.value.code == 9
    with pytest.raises(InvalidArgumentError) as refused:
        writer.upload(b"not a deb at all")
    assert refused.value.parameter == "file"
    assert "not a .deb" in str(refused.value)


def test_the_command_uploads_and_exits_4_on_a_refused_file(
    make_api: AppFactory, admin: CatalogueAdmin, tmp_path: Path
) -> None:
    api = make_api(blob_dir=str(tmp_path / "blobs"))
    key = admin.create_key("Alpha", "alpha-a", ("publish",)).secret_key
    deb = build_deb(tmp_path, "com.alpha.cmd", "0.9")
    done = invoke(InProcess(api.http), key, "upload", str(deb), "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["version"] == "0.9"
    junk = tmp_path / "junk.deb"
    junk.write_bytes(b"junk")
    refused = invoke(InProcess(api.http), key, "upload", str(junk))
    assert refused.exit_code == 4
    assert "file: not a .deb: not an ar archive" in refused.output
