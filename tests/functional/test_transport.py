"""What a client gets for a malformed request (docs/reliability.md, "Transport rejections").

A real ``pkgcat serve`` on 127.0.0.1, spoken to over raw sockets. granian (hyper)
refuses some requests before the application sees them: those answers are pinned here
exactly, since pkgcat cannot add its envelope or headers to them. Every other odd request
reaches the application and gets the envelope, a request id and pkgcat's headers.
"""

from __future__ import annotations

import contextlib
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.servers import Served, demo_server, environment, seed, serving

pytestmark = pytest.mark.server

HOST = b"Host: 127.0.0.1\r\n"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with demo_server(Path(tmp_path_factory.mktemp("transport"))) as server:
        yield server


def exchange(served: Served, raw: bytes) -> bytes:
    """Send ``raw`` on a new connection and read what comes back until the server closes it
    (after an answer with ``Connection: close``, and after any refusal)."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as connection:
        # A refused request can be cut short: the server may stop reading and close at once.
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            connection.sendall(raw)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
        return received


def head_and_body(answer: bytes) -> tuple[str, dict[str, str], bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.lower()] = value.strip()
    return status, headers, body


REFUSED_BY_GRANIAN = {
    "headers over 144 KiB": (
        b"GET /healthz HTTP/1.1\r\n" + HOST + b"X-Big: " + b"a" * 150_000 + b"\r\n\r\n",
        "HTTP/1.1 431 Request Header Fields Too Large",
    ),
    "more than 100 headers": (
        b"GET /healthz HTTP/1.1\r\n"
        + HOST
        + b"".join(b"X-%d: a\r\n" % n for n in range(101))
        + b"\r\n",
        "HTTP/1.1 431 Request Header Fields Too Large",
    ),
    "a target over 65,534 bytes": (
        b"GET /1.0/package/details.json?package="
        + b"a" * 66_000
        + b" HTTP/1.1\r\n"
        + HOST
        + b"\r\n",
        "HTTP/1.1 414 URI Too Long",
    ),
    "a NUL byte in the path": (
        b"GET /1.0/package/\x00details.json HTTP/1.1\r\n" + HOST + b"\r\n",
        "HTTP/1.1 400 Bad Request",
    ),
    "a 0xFF byte in the path": (
        b"GET /1.0/package/\xffdetails.json HTTP/1.1\r\n" + HOST + b"\r\n",
        "HTTP/1.1 400 Bad Request",
    ),
    "a 0xFF byte in the query": (
        b"GET /1.0/package/details.json?package=\xff HTTP/1.1\r\n" + HOST + b"\r\n",
        "HTTP/1.1 400 Bad Request",
    ),
    "a NUL byte in a header": (
        b"GET /healthz HTTP/1.1\r\n" + HOST + b"X-A: a\x00b\r\n\r\n",
        "HTTP/1.1 400 Bad Request",
    ),
    "a space in the path": (
        b"GET /1.0/package/details .json HTTP/1.1\r\n" + HOST + b"\r\n",
        "HTTP/1.1 400 Bad Request",
    ),
    "HTTP/2.0 in an HTTP/1 request line": (
        b"GET /healthz HTTP/2.0\r\n" + HOST + b"\r\n",
        "HTTP/1.1 400 Bad Request",
    ),
    "no version (HTTP/0.9)": (b"GET /healthz\r\n\r\n", "HTTP/1.1 400 Bad Request"),
    "a control byte in the method": (
        b"G\x01T /healthz HTTP/1.1\r\n" + HOST + b"\r\n",
        "HTTP/1.1 400 Bad Request",
    ),
    "a TLS handshake": (
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"x" * 64,
        "HTTP/1.1 400 Bad Request",
    ),
    "a Content-Length that is not a number": (
        b"GET /healthz HTTP/1.1\r\n" + HOST + b"Content-Length: abc\r\n\r\n",
        "HTTP/1.1 400 Bad Request",
    ),
}


@pytest.mark.parametrize(
    ("raw", "status"), REFUSED_BY_GRANIAN.values(), ids=list(REFUSED_BY_GRANIAN)
)
def test_what_granian_refuses_gets_a_bare_status_and_a_closed_connection(
    served: Served, raw: bytes, status: str
) -> None:
    answered_status, headers, body = head_and_body(exchange(served, raw))
    assert answered_status == status
    # Exactly these headers, and nothing of pkgcat's: no envelope, no request id.
    assert set(headers) == {"connection", "content-length", "date"}
    assert (headers["connection"], headers["content-length"], body) == ("close", "0", b"")


def test_the_http2_preface_on_http1_is_closed_without_an_answer(served: Served) -> None:
    assert exchange(served, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") == b""


REACHING_THE_APP = {
    "a target of 65,000 bytes": (
        b"GET /1.0/package/details.json?package=" + b"a" * 65_000 + b" HTTP/1.1\r\n",
        401,
        4,  # no key sent
    ),
    "headers of 64 KiB": (
        b"GET /1.0/package/details.json HTTP/1.1\r\nX-Big: " + b"a" * 65_536 + b"\r\n",
        401,
        4,
    ),
    "an encoded NUL in the path": (b"GET /1.0/package/%00details.json HTTP/1.1\r\n", 404, 1),
    "an encoded 0xFF in the path": (b"GET /1.0/package/%ffdetails.json HTTP/1.1\r\n", 404, 1),
    "an encoded 0xFF outside the API": (b"GET /docs%ff HTTP/1.1\r\n", 404, 1),
    "raw UTF-8 in the path": ("GET /1.0/package/d\u00e9tails.json HTTP/1.1\r\n".encode(), 404, 1),
    "an encoded NUL in the query": (
        b"GET /1.0/package/details.json?package=%00&secret_key=%ff HTTP/1.1\r\n",
        401,
        5,
    ),
    "0xFF bytes in the Authorization header": (
        b"GET /1.0/package/details.json HTTP/1.1\r\nAuthorization: Bearer \xff\xfe\r\n",
        401,
        5,
    ),
    "an unknown method": (b"BREW /1.0/package/details.json HTTP/1.1\r\n", 405, 7),
    "an absolute target": (b"GET http://elsewhere/1.0/package/details.json HTTP/1.1\r\n", 401, 4),
    "a version-like path": (b"GET /1.0\\package HTTP/1.1\r\n", 404, 1),
}


@pytest.mark.parametrize(
    ("raw", "status", "code"), REACHING_THE_APP.values(), ids=list(REACHING_THE_APP)
)
def test_odd_requests_that_reach_the_app_get_the_envelope_and_its_headers(
    served: Served, raw: bytes, status: int, code: int
) -> None:
    answer = exchange(served, raw + HOST + b"Connection: close\r\n\r\n")
    status_line, headers, body = head_and_body(answer)
    assert status_line.startswith(f"HTTP/1.1 {status} ")
    assert orjson.loads(body)["code"] == code
    assert headers["content-type"] == "application/json"
    assert re.fullmatch(r"[0-9a-f]{8}-\d+", headers["x-request-id"])
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["cache-control"] == "no-store"


REFUSED_BY_THE_APP = {
    "no Host in HTTP/1.1": (b"GET /healthz HTTP/1.1\r\n", 400, 2),
    "two Host headers": (b"GET /healthz HTTP/1.1\r\n" + HOST + b"Host: elsewhere\r\n", 400, 2),
    "two Host headers on the API": (
        b"GET /1.0/package/details.json HTTP/1.1\r\n" + HOST + b"Host: elsewhere\r\n",
        400,
        2,
    ),
    "a Host that names no host": (b"GET /healthz HTTP/1.1\r\nHost: a b\r\n", 400, 2),
    "an empty Host in HTTP/1.1": (b"GET /healthz HTTP/1.1\r\nHost:\r\n", 400, 2),
    "CONNECT to a host and port": (
        b"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n",
        405,
        7,
    ),
    "a target that is no path": (b"OPTIONS * HTTP/1.1\r\n" + HOST, 400, 2),
}


@pytest.mark.parametrize(
    ("raw", "status", "code"), REFUSED_BY_THE_APP.values(), ids=list(REFUSED_BY_THE_APP)
)
def test_a_request_without_one_host_or_a_path_is_refused(
    served: Served, raw: bytes, status: int, code: int
) -> None:
    """RFC 9112, section 3.2: no Host (in HTTP/1.1), two, or one that is no host is a 400."""
    status_line, headers, body = head_and_body(exchange(served, raw + b"Connection: close\r\n\r\n"))
    assert status_line.startswith(f"HTTP/1.1 {status} ")
    assert orjson.loads(body)["code"] == code
    assert "location" not in headers
    assert re.fullmatch(r"[0-9a-f]{8}-\d+", headers["x-request-id"])
    if status == 405:
        assert headers["allow"] == "GET, HEAD"


def test_http_1_0_may_leave_the_host_out(served: Served) -> None:
    status_line, _, body = head_and_body(exchange(served, b"GET /healthz HTTP/1.0\r\n\r\n"))
    assert status_line == "HTTP/1.0 200 OK"
    assert orjson.loads(body) == {"status": "ok"}


@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("/docs/", None),
        ("/metrics/", None),
        ("/dashboard/assets", None),
        ("/", "/docs"),
        ("/dashboard/", "/dashboard"),
    ],
)
def test_no_redirect_goes_to_the_host_a_client_names(
    served: Served, path: str, location: str | None
) -> None:
    raw = f"GET {path} HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n"
    status_line, headers, _ = head_and_body(exchange(served, raw.encode()))
    assert headers.get("location") == location, status_line
    assert status_line.startswith("HTTP/1.1 307 " if location else "HTTP/1.1 404 ")


def test_a_larger_connection_buffer_takes_headers_the_default_refuses(tmp_path: Path) -> None:
    """PKGCAT_CONNECTION_BUFFER_BYTES reaches the HTTP server: the 150 KB header section
    that the default 72 KiB refuses with 431 is read, and answered, under 408 KiB."""
    raw, _ = REFUSED_BY_GRANIAN["headers over 144 KiB"]
    env = environment(f"sqlite:///{tmp_path / 'served.db'}", connection_buffer_bytes="417792")
    seed(env)
    with serving(env, tmp_path / "server.log") as served:
        # HTTP/1.0: the server closes the connection after its answer, which ends the read.
        status, headers, _ = head_and_body(exchange(served, raw.replace(b"HTTP/1.1", b"HTTP/1.0")))
    assert status.endswith(" 200 OK"), status
    assert "x-request-id" in headers  # it reached the app
