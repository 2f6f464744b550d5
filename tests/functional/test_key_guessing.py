"""Failed authentications are throttled per client address (docs/reliability.md, "Key guessing").

Real servers on 127.0.0.1: one over SQLite, whose workers count failures in memory, and
two over PostgreSQL sharing one Redis, as two hosts would. The test's clients connect
from different loopback addresses (127.0.0.1, 127.0.0.2, and 127.0.0.3 as a trusted
reverse proxy).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers import DETAILS, Served, environment, seed, serving

pytestmark = [pytest.mark.server, pytest.mark.slow]

ALLOWANCE = 5
PROXY = "127.0.0.3"
WRONG = "pkc_" + "0" * 40


class Client:
    """Requests from one local address, to the servers in turn."""

    def __init__(self, servers: list[Served], address: str) -> None:
        self.servers = servers
        self.sessions = [
            httpx.Client(
                base_url=s.base,
                timeout=10,
                transport=httpx.HTTPTransport(local_address=address),
            )
            for s in servers
        ]
        self.turn = 0

    def details(
        self, key: str | None, *, on: int | None = None, forwarded: str | None = None
    ) -> httpx.Response:
        """A details request with ``key``, to server ``on`` or the next one in turn."""
        if on is None:
            on, self.turn = self.turn, (self.turn + 1) % len(self.sessions)
        headers = {"X-Forwarded-For": forwarded} if forwarded else {}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        app = self.servers[0].apps[0]
        return self.sessions[on].get(
            DETAILS, params={"package": app["paid_package"]}, headers=headers
        )

    def close(self) -> None:
        for session in self.sessions:
            session.close()


@pytest.fixture(params=["sqlite", "postgres+redis"])
def servers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[Served]]:
    settings = {"auth_failure_limit": f"{ALLOWANCE}/minute", "trusted_proxies": PROXY}
    if request.param == "sqlite":
        env = environment(f"sqlite:///{tmp_path / 'served.db'}", **settings)
        count = 1
    else:
        env = environment(
            request.getfixturevalue("postgres_url"),
            redis_url=request.getfixturevalue("redis_url"),
            rate_limit_namespace=f"test-{secrets.token_hex(6)}",
            **settings,
        )
        count = 2
    apps = seed(env)
    with ExitStack() as stack:
        yield [
            stack.enter_context(serving(env, tmp_path / f"server-{n}.log", apps=apps))
            for n in range(count)
        ]


@pytest.fixture
def clients(servers: list[Served]) -> Iterator[dict[str, Client]]:
    made = {address: Client(servers, address) for address in ("127.0.0.1", "127.0.0.2", PROXY)}
    yield made
    for client in made.values():
        client.close()


def key_of(servers: list[Served]) -> str:
    key: str = servers[0].apps[0]["secret_key"]
    return key


def spend_the_allowance(client: Client, forwarded: str | None = None) -> httpx.Response:
    """``ALLOWANCE`` wrong keys, each refused as such, then one more: the refusal it gets."""
    for _ in range(ALLOWANCE):
        assert client.details(WRONG, forwarded=forwarded).status_code == 401
    return client.details(WRONG, forwarded=forwarded)


def assert_throttled(response: httpx.Response) -> None:
    assert response.status_code == 429
    body: dict[str, Any] = response.json()
    assert body["code"] == 13
    assert "too many failed authentications" in body["response"]
    assert 1 <= int(response.headers["retry-after"]) <= 60
    assert response.headers["ratelimit-limit"] == str(ALLOWANCE)
    assert response.headers["ratelimit-remaining"] == "0"
    assert response.headers["ratelimit-policy"] == f"{ALLOWANCE};w=60"  # the allowance's window


def test_wrong_keys_past_the_allowance_are_refused_with_429(
    servers: list[Served], clients: dict[str, Client]
) -> None:
    guesser = clients["127.0.0.1"]
    refused = spend_the_allowance(guesser)
    assert_throttled(refused)
    # Every server refuses the address, a valid key included: on a server of its own at
    # once, on another at the first failure it sees once the shared allowance is spent.
    last = (guesser.turn - 1) % len(servers)
    assert_throttled(guesser.details(key_of(servers), on=last))
    for other in range(len(servers)):
        if other != last:
            assert_throttled(guesser.details(WRONG, on=other))
            assert_throttled(guesser.details(key_of(servers), on=other))


def test_another_address_is_not_affected(servers: list[Served], clients: dict[str, Client]) -> None:
    assert_throttled(spend_the_allowance(clients["127.0.0.1"]))
    neighbour = clients["127.0.0.2"]
    for on in range(len(servers)):
        assert neighbour.details(key_of(servers), on=on).status_code == 200
        assert neighbour.details(WRONG, on=on).status_code == 401


def test_a_forwarded_address_from_an_untrusted_peer_is_ignored(
    servers: list[Served], clients: dict[str, Client]
) -> None:
    guesser = clients["127.0.0.1"]
    # The header would put each guess on another address: it is not believed.
    for n in range(ALLOWANCE):
        assert guesser.details(WRONG, forwarded=f"203.0.113.{n}").status_code == 401
    assert_throttled(guesser.details(WRONG, forwarded="203.0.113.99"))


def test_a_trusted_proxy_s_forwarded_address_is_the_client(
    servers: list[Served], clients: dict[str, Client]
) -> None:
    proxy = clients[PROXY]
    assert_throttled(spend_the_allowance(proxy, forwarded="198.51.100.1"))
    # What a client writes into the header itself comes before what the proxy appends.
    spoofed = "198.51.100.7, 198.51.100.1"
    refusing = (proxy.turn - 1) % len(servers)  # the server that counted the last failure
    assert_throttled(proxy.details(key_of(servers), on=refusing, forwarded=spoofed))
    # Other clients behind the same proxy, and the proxy's own address, are served.
    for on in range(len(servers)):
        assert proxy.details(key_of(servers), on=on, forwarded="198.51.100.2").status_code == 200
        assert proxy.details(key_of(servers), on=on).status_code == 200


def test_requests_without_a_key_are_not_counted(
    servers: list[Served], clients: dict[str, Client]
) -> None:
    client = clients["127.0.0.1"]
    for _ in range(3 * ALLOWANCE):
        assert client.details(None).status_code == 401
    assert client.details(key_of(servers)).status_code == 200
