"""Which host names reach the resolver: DNS's lengths (RFC 1035 section 2.3.4) and IDNA 2008."""

from __future__ import annotations

import httpcore
import pytest

from pkgcat.net.addresses import Allowance
from pkgcat.net.backends import GuardedBackend
from pkgcat.net.names import MAX_LABEL, MAX_NAME, lookup_name

LABEL = "a" * MAX_LABEL
NAME = ".".join([LABEL, LABEL, LABEL, "a" * 61])
"""253 characters: the longest name DNS carries (255 octets on the wire)."""


@pytest.mark.parametrize(
    ("host", "sent"),
    [
        (f"{LABEL}.example", f"{LABEL}.example"),
        (NAME, NAME),
        (f"{NAME}.", f"{NAME}."),  # the final dot is not counted
        ("bücher.example", "xn--bcher-kva.example"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("_service.example", "_service.example"),  # DNS allows it; only host names' rules do not
        ("192.0.2.1", "192.0.2.1"),
        ("2001:db8::1", "2001:db8::1"),
    ],
)
def test_a_name_dns_carries_is_sent_in_ascii(host: str, sent: str) -> None:
    assert len(NAME) == MAX_NAME
    assert lookup_name(host) == sent


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        (
            "a" * 300 + ".example",
            "label 'aaaaaaaaaaaaaaaaaaaa...' is 300 octets long; DNS allows 63",
        ),
        ("a" * 64 + ".example", "is 64 octets long; DNS allows 63"),
        (NAME + "a", "the host name is 254 octets long; DNS allows 253"),
        ("a..example", "an empty label"),
        (".", "names no host"),
        ("xn--zz.example", "label 'xn--zz' is not a valid IDNA A-label"),
        ("é" * 70 + ".example", "not one IDNA can encode"),
        ("a\u200db.example", "not one IDNA can encode"),  # a joiner IDNA 2008 refuses here
    ],
)
def test_a_name_dns_cannot_carry_is_refused_saying_why(host: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason.replace(".", r"\.")):
        lookup_name(host)


def test_the_backend_refuses_such_a_name_as_a_connection_error_before_any_lookup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looked_up: list[str] = []
    monkeypatch.setattr("socket.getaddrinfo", lambda host, *_a, **_k: looked_up.append(host))
    with pytest.raises(httpcore.ConnectError, match="cannot be looked up: the host name's label"):
        GuardedBackend(Allowance()).connect_tcp("a" * 300 + ".example", 443)
    assert looked_up == []
