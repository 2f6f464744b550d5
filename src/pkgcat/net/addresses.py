"""Which addresses an outbound request may connect to.

An address is refused when it is not a public unicast address of the Internet:
loopback, private (RFC 1918, unique local ``fc00::/7``), link-local, multicast,
unspecified, reserved, shared (``100.64.0.0/10``), documentation and benchmark
ranges, and the cloud metadata addresses (``169.254.169.254``, ``fd00:ec2::254``,
``100.100.100.200``). An IPv6 address that carries an IPv4 one (IPv4-mapped
``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4 and Teredo) is judged by that
IPv4 address too. The standard library's :mod:`ipaddress` knows the ranges
(IANA's special-purpose registries); this module adds the ones it counts as
global but no fetch should reach (multicast, the embedded IPv4 forms).

The operator allows exceptions in ``PKGCAT_FETCH_ALLOW``, a comma-separated list of:

- host names (``mirror.internal``, ``localhost``): any address they resolve to, any port;
- ``host:port`` pairs (``127.0.0.1:8080``, ``[::1]:8080``, ``mirror.internal:8443``):
  that host, or that address, on that port only;
- addresses and networks (``10.0.0.5``, ``10.1.0.0/16``, ``fd12::/64``): any port.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

METADATA = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)
"""Where clouds answer instance metadata (credentials among it): AWS, GCP, Azure, Alibaba."""
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_HOST = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?")
_PAIR = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^:\[\]]+)):(?P<port>\d{1,5})")


def _embedded(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, NAT64, 6to4, Teredo), if any."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def refusal(address: IPAddress) -> str | None:
    """Why ``address`` is refused (``"a loopback address"``...), or ``None`` for a public one."""
    inner = _embedded(address)
    if inner is not None and (reason := refusal(inner)) is not None:
        return f"{reason} ({inner}) inside IPv6"
    checks = (
        (address in METADATA, "a cloud metadata address"),
        (address.is_loopback, "a loopback address"),
        (address.is_link_local, "a link-local address"),
        (address.is_multicast, "a multicast address"),
        (address.is_unspecified, "the unspecified address"),
        (address.is_private, "a private address"),
        (address.is_reserved, "a reserved address"),
        (not address.is_global, "not a public address"),
    )
    return next((reason for refused, reason in checks if refused), None)


def _port(text: str, entry: str) -> int:
    port = int(text)
    if not 0 < port < 65536:
        raise ValueError(f"{entry!r}: {port} is not a port")
    return port


@dataclass(frozen=True, slots=True)
class Allowance:
    """What ``PKGCAT_FETCH_ALLOW`` lets through; empty by default: no exception."""

    hosts: frozenset[str] = frozenset()
    pairs: frozenset[tuple[str, int]] = frozenset()
    """(host name or address as text, port)"""
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, value: str) -> Allowance:
        """Read the setting; ``ValueError`` naming the first entry that is not one of the forms."""
        hosts: set[str] = set()
        pairs: set[tuple[str, int]] = set()
        networks: list[IPNetwork] = []
        for entry in (part.strip() for part in value.split(",")):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            except ValueError:
                pass
            pair = _PAIR.fullmatch(entry)
            if pair is not None:
                host = pair["v6"] or pair["host"]
                try:
                    host = str(ipaddress.ip_address(host))
                except ValueError:
                    if not _HOST.fullmatch(host):
                        raise ValueError(f"{entry!r}: {host!r} is not a host name") from None
                pairs.add((host.lower().rstrip("."), _port(pair["port"], entry)))
            elif _HOST.fullmatch(entry):
                hosts.add(entry.lower().rstrip("."))
            else:
                raise ValueError(
                    f"{entry!r} is not a host, host:port or network "
                    "(examples: 'mirror.internal', '127.0.0.1:8080', '10.0.0.0/8')"
                )
        return cls(frozenset(hosts), frozenset(pairs), tuple(networks))

    def names(self, host: str, port: int) -> bool:
        """Whether ``host`` (as the address names it) is allowed on ``port`` whatever it resolves to."""
        name = host.lower().rstrip(".")
        return name in self.hosts or (name, port) in self.pairs

    def covers(self, address: IPAddress, port: int) -> bool:
        """Whether ``address`` (or the IPv4 address it carries) is allowed on ``port``."""
        for candidate in filter(None, (address, _embedded(address))):
            if (str(candidate), port) in self.pairs or str(candidate) in self.hosts:
                return True
            if any(candidate in network for network in self.networks):
                return True
        return False


def vet(host: str, port: int, addresses: list[IPAddress], allowance: Allowance) -> str | None:
    """Why connecting to ``host`` (resolved to ``addresses``) is refused, or ``None``.

    Every address must pass: a name that resolves to one public and one private
    address is refused, whichever of them a connection would have used.
    """
    if allowance.names(host, port):
        return None
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    for address in addresses:
        reason = refusal(address)
        if reason is not None and not allowance.covers(address, port):
            shown = f"[{host}]" if ":" in host else host
            what = f"{host} is" if literal == address else f"{host} resolves to {address},"
            return f"{what} {reason}; PKGCAT_FETCH_ALLOW={shown}:{port} would allow it"
    return None
