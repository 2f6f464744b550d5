"""Which addresses an outbound request may reach, and what PKGCAT_FETCH_ALLOW lets through."""

from __future__ import annotations

import ipaddress

import pytest
from pydantic import ValidationError

from pkgcat.config import Settings
from pkgcat.net.addresses import Allowance, refusal, vet

REFUSED = {
    "127.0.0.1": "a loopback address",
    "127.8.9.10": "a loopback address",
    "::1": "a loopback address",
    "10.1.2.3": "a private address",
    "172.16.0.1": "a private address",
    "192.168.1.1": "a private address",
    "fd12::1": "a private address",
    "169.254.10.1": "a link-local address",
    "fe80::1": "a link-local address",
    "169.254.169.254": "a cloud metadata address",
    "fd00:ec2::254": "a cloud metadata address",
    "100.100.100.200": "a cloud metadata address",
    "100.64.0.1": "not a public address",
    "224.0.0.1": "a multicast address",
    "ff0e::1": "a multicast address",
    "0.0.0.0": "the unspecified address",  # noqa: S104 - an address refused, not one bound
    "::": "the unspecified address",
    "240.0.0.1": "a private address",
    "192.0.2.1": "a private address",
    "::ffff:169.254.169.254": "a cloud metadata address (169.254.169.254) inside IPv6",
    "::ffff:10.0.0.1": "a private address (10.0.0.1) inside IPv6",
    "64:ff9b::7f00:1": "a loopback address (127.0.0.1) inside IPv6",
    "2002:7f00:1::": "a loopback address (127.0.0.1) inside IPv6",
}


@pytest.mark.parametrize(("address", "reason"), REFUSED.items())
def test_addresses_that_are_not_public_are_refused(address: str, reason: str) -> None:
    assert refusal(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"])
def test_public_addresses_pass(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None


def test_a_name_with_one_refused_address_is_refused_whatever_else_it_has() -> None:
    addresses = [ipaddress.ip_address(a) for a in ("93.184.216.34", "10.0.0.7")]
    assert vet("mixed.example", 443, addresses, Allowance()) == (
        "mixed.example resolves to 10.0.0.7, a private address; "
        "PKGCAT_FETCH_ALLOW=mixed.example:443 would allow it"
    )


@pytest.mark.parametrize(
    ("allow", "host", "port", "address", "allowed"),
    [
        ("mirror.internal", "Mirror.Internal.", 8080, "10.0.0.7", True),
        ("mirror.internal:8443", "mirror.internal", 8443, "10.0.0.7", True),
        ("mirror.internal:8443", "mirror.internal", 8444, "10.0.0.7", False),
        ("10.0.0.0/8", "anything.example", 1, "10.200.0.1", True),
        ("10.0.0.5", "anything.example", 1, "10.0.0.6", False),
        ("127.0.0.1:18101", "localhost", 18101, "127.0.0.1", True),
        ("127.0.0.1:18101", "localhost", 18102, "127.0.0.1", False),
        ("[::1]:80", "::1", 80, "::1", True),
        ("127.0.0.1", "::ffff:127.0.0.1", 80, "::ffff:127.0.0.1", True),
        ("", "localhost", 80, "127.0.0.1", False),
    ],
)
def test_the_allowance_takes_hosts_pairs_and_networks(
    allow: str, host: str, port: int, address: str, allowed: bool
) -> None:
    found = vet(host, port, [ipaddress.ip_address(address)], Allowance.parse(allow))
    assert (found is None) is allowed


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("http://mirror", "'http://mirror' is not a host, host:port or network"),
        ("mirror:99999", "'mirror:99999': 99999 is not a port"),
        ("10.0.0.0/33", "'10.0.0.0/33' is not a host, host:port or network"),
    ],
)
def test_a_bad_allowance_is_refused_naming_the_entry(value: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(fetch_allow=value)
