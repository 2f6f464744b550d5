"""The outbound fetcher against hostile servers on 127.0.0.1, sync and async.

Every server here is loopback, so every test allows it explicitly (as an operator would,
with PKGCAT_FETCH_ALLOW), or shows that it is refused without being connected to.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import ssl
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
import trustme

from pkgcat.net.addresses import Allowance
from pkgcat.net.errors import (
    AddressRefused,
    DeadlineExceeded,
    OutboundError,
    RedirectRefused,
    TooLarge,
)
from pkgcat.net.fetcher import Answer, AsyncFetcher, Fetcher, Limits, Policy, follow_any
from tests.hostile import Hostile, body, drip, endless, gzip_bomb, redirect

MIB = 1024 * 1024
LIMITS = Limits(max_bytes=4 * MIB, deadline=10)
Start = Callable[..., Hostile]


def allowing(*servers: Hostile, timeout: float = 5) -> Policy:
    """A policy that allows exactly these servers' address and port."""
    pairs = ",".join(f"{s.host}:{s.port}" for s in servers)
    return Policy(allow=Allowance.parse(pairs), timeout=timeout)


def fetch(policy: Policy, url: str, limits: Limits = LIMITS, **options: Any) -> Answer:
    with Fetcher(policy) as fetcher:
        return fetcher.get(url, limits=limits, **options)


def fetch_async(policy: Policy, url: str, limits: Limits = LIMITS, **options: Any) -> Answer:
    async def run() -> Answer:
        async with AsyncFetcher(policy) as fetcher:
            return await fetcher.get(url, limits=limits, **options)

    return asyncio.run(run())


BOTH = pytest.mark.parametrize("get", [fetch, fetch_async], ids=["sync", "async"])


# Addresses -------------------------------------------------------------------------------------


@BOTH
@pytest.mark.parametrize(
    ("host", "shown"),
    [
        ("127.0.0.1", "127.0.0.1 is a loopback address"),
        ("localhost", "localhost resolves to 127.0.0.1, a loopback address"),
        ("[::ffff:127.0.0.1]", "::ffff:127.0.0.1 is a loopback address (127.0.0.1) inside IPv6"),
        ("2130706433", "2130706433 resolves to 127.0.0.1, a loopback address"),
    ],
)
def test_a_loopback_server_is_refused_without_a_connection(
    hostile: Start, get: Callable[..., Answer], host: str, shown: str
) -> None:
    server = hostile({"/": body(b"inside")})
    url = f"http://{host}:{server.port}/"
    with pytest.raises(AddressRefused) as refused:
        get(Policy(), url)
    message = str(refused.value)
    assert message.startswith(f"{url}: {shown}")
    assert f"PKGCAT_FETCH_ALLOW={host}:{server.port} would allow it" in message
    assert server.connections == 0


@BOTH
def test_ipv6_loopback_is_refused_without_a_connection(
    hostile: Start, get: Callable[..., Answer]
) -> None:
    server = hostile({"/": body(b"inside")}, host="::1")
    with pytest.raises(AddressRefused, match=r"::1 is a loopback address"):
        get(Policy(), server.url())
    assert server.connections == 0


def test_no_connection_is_tried_to_a_metadata_address(
    connect_attempts: list[tuple[str, int]],
) -> None:
    with Fetcher(Policy()) as fetcher:
        for url in ("http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/"):
            with pytest.raises(AddressRefused, match=r"a cloud metadata address"):
                fetcher.get(url, limits=LIMITS)
    assert connect_attempts == []


@BOTH
@pytest.mark.parametrize(
    "allow", ["127.0.0.1:{port}", "127.0.0.1", "127.0.0.0/8", "localhost", "localhost:{port}"]
)
def test_what_the_allowance_names_is_fetched(
    hostile: Start, get: Callable[..., Answer], allow: str
) -> None:
    server = hostile({"/": body(b"inside")})
    policy = Policy(allow=Allowance.parse(allow.format(port=server.port)))
    assert get(policy, f"http://localhost:{server.port}/").content == b"inside"


@BOTH
def test_an_allowed_pair_allows_its_port_only(hostile: Start, get: Callable[..., Answer]) -> None:
    allowed, other = hostile({"/": body(b"a")}), hostile({"/": body(b"b")})
    with pytest.raises(AddressRefused):
        get(allowing(allowed), other.url())
    assert other.connections == 0


def test_the_name_is_resolved_once_and_the_checked_address_is_connected_to(
    monkeypatch: pytest.MonkeyPatch, connect_attempts: list[tuple[str, int]]
) -> None:
    # A resolver that answers a public address, then loopback (DNS rebinding): the fetch
    # must connect to what it checked, never ask again.
    answers = iter(["93.184.216.34", "127.0.0.1"])
    asked: list[str] = []
    system = socket.getaddrinfo

    def resolver(host: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if host[:1].isdigit():  # an address needs no resolver: the system's reads it
            return system(host, port, *args, **kwargs)
        asked.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), int(port)))]

    monkeypatch.setattr("socket.getaddrinfo", resolver)
    with pytest.raises(OutboundError, match=r"cannot be fetched"):
        fetch(Policy(), "http://rebinding.example/")
    assert asked == ["rebinding.example"]
    assert connect_attempts == [("93.184.216.34", 80)]


def test_tls_names_the_host_while_connecting_to_its_checked_address(
    hostile: Start,
) -> None:
    authority = trustme.CA()
    certificate = authority.issue_cert("localhost")
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    certificate.configure_cert(served)
    server = hostile({"/": body(b"over tls")}, tls=served)
    trusted = ssl.create_default_context()
    authority.configure_trust(trusted)
    policy = Policy(allow=Allowance.parse(f"localhost:{server.port}"), verify=trusted)
    answer = fetch(policy, f"https://localhost:{server.port}/")
    assert answer.content == b"over tls"
    assert server.hosts == [f"localhost:{server.port}"]


OVERLONG = [
    ("a" * 300 + ".example", "is 300 octets long; DNS allows 63"),
    (".".join(["a" * 60] * 5), "the host name is 304 octets long; DNS allows 253"),
    ("a..example", "an empty label"),
    ("xn--zz.example", "is not a valid IDNA A-label"),
    ("é" * 70 + ".example", "not an address"),
]
"""Names the standard library's resolver would answer with UnicodeError, or DNS cannot carry."""


@BOTH
@pytest.mark.parametrize(("host", "reason"), OVERLONG)
def test_a_name_dns_cannot_carry_is_refused_before_any_lookup(
    monkeypatch: pytest.MonkeyPatch,
    connect_attempts: list[tuple[str, int]],
    get: Callable[..., Answer],
    host: str,
    reason: str,
) -> None:
    looked_up: list[str] = []
    monkeypatch.setattr("socket.getaddrinfo", lambda name, *_a, **_k: looked_up.append(name))
    url = f"https://{host}/dists/stable/Release"
    with pytest.raises(OutboundError) as refused:
        get(Policy(), url)
    assert str(refused.value).startswith(f"{url}: ")
    assert reason in str(refused.value)
    assert looked_up == []
    assert connect_attempts == []


# Redirects -------------------------------------------------------------------------------------


@BOTH
def test_a_redirect_to_a_refused_address_is_not_followed(
    hostile: Start, get: Callable[..., Answer]
) -> None:
    inside = hostile()
    outside = hostile({"/": redirect(inside.url("/secret"))})
    with pytest.raises(AddressRefused) as refused:
        get(allowing(outside), outside.url(), follow=follow_any)
    assert str(refused.value).startswith(f"{inside.url('/secret')}: 127.0.0.1 is a loopback")
    assert inside.connections == 0


@BOTH
def test_redirects_are_followed_only_where_the_caller_allows(
    hostile: Start, get: Callable[..., Answer]
) -> None:
    target = hostile({"/there": body(b"there")})
    start = hostile({"/": redirect(target.url("/there"))})
    policy = allowing(start, target)
    # Without a rule, the redirect itself is the answer.
    assert get(policy, start.url()).status == 302
    with pytest.raises(RedirectRefused, match=r"redirected to .*/there, not followed"):
        get(policy, start.url(), follow=lambda url: url.port == start.port)
    assert target.connections == 0
    assert get(policy, start.url(), follow=follow_any).content == b"there"


@BOTH
def test_a_redirect_to_a_name_dns_cannot_carry_is_not_followed(
    hostile: Start, get: Callable[..., Answer]
) -> None:
    start = hostile({"/": redirect("https://" + "a" * 300 + ".example/")})
    with pytest.raises(RedirectRefused, match=r"redirected to .*; the host name's label"):
        get(allowing(start), start.url(), follow=follow_any)


@BOTH
def test_a_redirect_loop_stops(hostile: Start, get: Callable[..., Answer]) -> None:
    server = hostile()
    server.route("/", redirect(server.url("/")))
    with pytest.raises(RedirectRefused, match=r"more than 5 redirects"):
        get(allowing(server), server.url(), follow=follow_any)


# Sizes -----------------------------------------------------------------------------------------


@BOTH
def test_a_content_encoding_bomb_stops_at_the_cap_in_bounded_memory(
    hostile: Start, get: Callable[..., Answer]
) -> None:
    bomb = gzip_bomb(256 * MIB)  # 256 KiB on the wire
    server = hostile({"/": body(bomb, headers={"Content-Encoding": "gzip"})})
    tracemalloc.start()
    try:
        with pytest.raises(TooLarge, match=r"more than 4194304 bytes once its Content-Encoding"):
            get(allowing(server), server.url())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * LIMITS.max_bytes


@BOTH
def test_an_endless_body_stops_at_the_cap(hostile: Start, get: Callable[..., Answer]) -> None:
    server = hostile({"/": endless()})
    with pytest.raises(TooLarge, match=r"more than 4194304 bytes$"):
        get(allowing(server), server.url())
    # The client hung up: the server could not write more than the socket buffers hold.
    assert server.sent("/") < 64 * MIB


@BOTH
def test_a_length_over_the_cap_is_refused_before_the_body(
    hostile: Start, get: Callable[..., Answer]
) -> None:
    server = hostile({"/": body(b"x" * (LIMITS.max_bytes + 1))})
    with pytest.raises(TooLarge, match=r"4194305 bytes, over the limit of 4194304"):
        get(allowing(server), server.url())


@BOTH
def test_an_encoding_not_asked_for_is_refused(hostile: Start, get: Callable[..., Answer]) -> None:
    server = hostile({"/": body(b"(data)", headers={"Content-Encoding": "br"})})
    with pytest.raises(OutboundError, match=r"Content-Encoding 'br' is not accepted"):
        get(allowing(server), server.url())


@BOTH
def test_gzip_within_the_cap_is_decoded(hostile: Start, get: Callable[..., Answer]) -> None:
    data = b"Package: a\n" * 10_000
    server = hostile({"/": body(gzip.compress(data), headers={"Content-Encoding": "gzip"})})
    assert get(allowing(server), server.url()).content == data


# Time ------------------------------------------------------------------------------------------


@BOTH
def test_a_drip_feed_ends_at_the_deadline(hostile: Start, get: Callable[..., Answer]) -> None:
    server = hostile({"/": drip(every=0.05)})
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded, match=r"not done within its deadline of 0.5 s"):
        # Each byte comes long before the read timeout: only the deadline can end it.
        get(allowing(server, timeout=5), server.url(), Limits(max_bytes=MIB, deadline=0.5))
    assert time.monotonic() - started < 3
    assert 0 < server.sent("/") < 200
