"""The failed-authentication throttle: whose address a request counts against, and for how long."""

from __future__ import annotations

import asyncio
import ipaddress
import logging

import pytest

from pkgcat.config import Settings
from pkgcat.http.throttle import AuthThrottle
from pkgcat.storage.backends import open_failure_limiter
from pkgcat.storage.limiter import WindowLimiter
from tests.servers import free_port

PROXIES = (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("fd00::/8"))


def scope(peer: str, forwarded: str | None = None) -> dict[str, object]:
    headers = [(b"x-forwarded-for", forwarded.encode())] if forwarded is not None else []
    return {"client": (peer, 50000), "headers": headers}


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        ("203.0.113.5", None, "203.0.113.5"),
        ("203.0.113.5", "198.51.100.1", "203.0.113.5"),  # not a proxy: the header is ignored
        ("10.0.0.2", "198.51.100.1", "198.51.100.1"),
        ("10.0.0.2", "198.51.100.9, 198.51.100.1", "198.51.100.1"),  # the proxy's own entry
        ("10.0.0.2", "198.51.100.1, 10.0.0.3", "198.51.100.1"),  # through two proxies
        ("10.0.0.2", None, "10.0.0.2"),
        ("10.0.0.2", "10.0.0.3", "10.0.0.2"),  # only proxies: the peer
        ("2001:db8:1:2:3:4:5:6", None, "2001:db8:1:2::/64"),
        ("::ffff:203.0.113.5", None, "203.0.113.5"),
        ("fd00::1", "2001:db8:9:9::1", "2001:db8:9:9::/64"),
        # A dual-stack listener (PKGCAT_HOST=::) gives an IPv4 proxy as ::ffff:a.b.c.d.
        ("::ffff:10.0.0.2", "198.51.100.1", "198.51.100.1"),
        ("::ffff:10.0.0.2", "198.51.100.1, ::ffff:10.0.0.3", "198.51.100.1"),
        ("::ffff:10.0.0.2", None, "10.0.0.2"),
        ("::ffff:203.0.113.5", "198.51.100.1", "203.0.113.5"),  # not a proxy
    ],
)
def test_the_client_is_the_peer_or_what_a_trusted_proxy_forwards(
    peer: str, forwarded: str | None, client: str
) -> None:
    throttle = AuthThrottle(WindowLimiter("5/minute"), proxies=PROXIES)
    assert throttle.client(scope(peer, forwarded)) == client


def test_an_address_is_refused_past_its_allowance_until_the_window_ends() -> None:
    now = [1000.0]
    throttle = AuthThrottle(WindowLimiter("3/minute", clock=lambda: now[0]), clock=lambda: now[0])

    async def failures(count: int) -> list[int | None]:
        return [await throttle.failed("203.0.113.5") for _ in range(count)]

    assert asyncio.run(failures(3)) == [None, None, None]
    assert throttle.refusal("203.0.113.5") is None
    wait = asyncio.run(failures(1))[0]
    assert wait is not None
    assert 1 <= wait <= 60
    assert throttle.refusal("203.0.113.5") == wait
    assert throttle.refusal("198.51.100.1") is None
    now[0] += wait
    assert throttle.refusal("203.0.113.5") is None
    assert not throttle.refused  # ended refusals leave the dict empty again


def test_without_redis_failures_are_not_counted_and_one_warning_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = Settings(
        redis_url=f"redis://127.0.0.1:{free_port()}/0", auth_failure_limit="1/minute"
    )
    throttle = AuthThrottle(open_failure_limiter(settings))

    async def failures() -> list[int | None]:
        try:
            return [await throttle.failed("203.0.113.5") for _ in range(5)]
        finally:
            await throttle.close()

    with caplog.at_level(logging.WARNING, logger="pkgcat.http"):
        answers = asyncio.run(failures())
    assert answers == [None] * 5
    assert not throttle.refused
    warnings = [r for r in caplog.records if "failed authentications" in r.getMessage()]
    assert len(warnings) == 1
