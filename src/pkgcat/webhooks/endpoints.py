"""The endpoints of an application: created, listed, changed, deleted, their secret rolled.

An address must be ``https://`` (``http://`` too when
``PKGCAT_WEBHOOK_ALLOW_LOOPBACK=true``), carry no user or password, and resolve
only to addresses the fetcher accepts: private, loopback, link-local and
metadata addresses are refused (loopback alone allowed by the same setting).
Its host must be a name DNS can carry and IDNA can write
(:func:`pkgcat.net.names.lookup_name`: labels of 63 octets at most, names of
253), refused as ``url`` before any lookup.
It is checked here, at creation and change, and again at every delivery by the
fetcher itself (:mod:`pkgcat.net`), since DNS can change meanwhile.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from pkgcat.events import NAMES
from pkgcat.net.addresses import Allowance, vet
from pkgcat.net.names import lookup_name
from pkgcat.storage.webhooks import EndpointRecord, WebhookStore
from pkgcat.webhooks.signing import new_secret, seal_secret

GRACE_SECONDS = 24 * 3600
"""How long the previous secret keeps signing after a roll, by default."""
LOOPBACK = "127.0.0.0/8,::1/128"


class EndpointRefused(ValueError):
    """An endpoint that cannot be stored as asked; the message says why, in one line,
    after the name of the field at fault and a colon."""

    @property
    def field(self) -> str:
        """The field at fault (``url``, ``events``...), as the message starts."""
        return str(self).partition(":")[0]


class NotFound(EndpointRefused):
    """No such endpoint (or event) for this application: another's is not told apart."""


@dataclass(frozen=True, slots=True)
class Created:
    endpoint: EndpointRecord
    secret: str
    """Shown once: only its sealed form is kept."""


def allowance(fetch_allow: str, allow_loopback: bool) -> Allowance:
    """The operator's ``PKGCAT_FETCH_ALLOW``, and loopback when webhooks may use it."""
    return Allowance.parse(
        ",".join(filter(None, (fetch_allow, LOOPBACK if allow_loopback else "")))
    )


def check_events(events: Sequence[str]) -> tuple[str, ...]:
    wanted = tuple(dict.fromkeys(events))
    if not wanted:
        raise EndpointRefused(f"events: name at least one of {', '.join(NAMES)}")
    unknown = [name for name in wanted if name not in NAMES]
    if unknown:
        raise EndpointRefused(f"events: {unknown[0]!r} is not an event type ({', '.join(NAMES)})")
    return wanted


def check_url(url: str, allowed: Allowance, *, allow_http: bool) -> str:
    """``url`` if a deliverer may post to it now; :class:`EndpointRefused` saying why not."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as error:
        raise EndpointRefused(f"url: {error}") from None
    schemes = ("https", "http") if allow_http else ("https",)
    if parsed.scheme not in schemes:
        needs = "" if allow_http else " (http only with PKGCAT_WEBHOOK_ALLOW_LOOPBACK=true)"
        raise EndpointRefused(f"url: must be an https:// address{needs}")
    # The host as httpx sends it (ASCII, A-labels): its ``host`` decodes them, and fails
    # on a label IDNA cannot decode.
    host = parsed.raw_host.decode("ascii")
    if not host:
        raise EndpointRefused("url: names no host")
    if parsed.userinfo:
        raise EndpointRefused("url: must not carry a user name or password")
    try:
        name = lookup_name(host)
    except ValueError as error:
        raise EndpointRefused(f"url: {error}") from None
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        found = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise EndpointRefused(f"url: {host} does not resolve") from None
    addresses = [ipaddress.ip_address(info[4][0]) for info in found]
    reason = vet(host, port, addresses, allowed)
    if reason is not None:
        raise EndpointRefused(f"url: refused: {reason}")
    return str(parsed)


class Endpoints:
    """The use cases of an application's endpoints; no HTTP, no SQL."""

    def __init__(
        self,
        store: WebhookStore,
        *,
        passphrase: str | None,
        allowed: Allowance,
        allow_http: bool,
    ) -> None:
        self._store = store
        self._passphrase = passphrase
        self._allowed = allowed
        self._allow_http = allow_http

    def create(self, application_id: int, url: str, events: Sequence[str]) -> Created:
        wanted = check_events(events)
        checked = check_url(url, self._allowed, allow_http=self._allow_http)
        secret = new_secret()
        record = self._store.create(
            application_id=application_id,
            url=checked,
            events=wanted,
            sealed_secret=seal_secret(secret, self._passphrase),
            now=int(time.time()),
        )
        return Created(record, secret)

    def list(self, application_id: int) -> list[EndpointRecord]:
        return self._store.of_application(application_id)

    def get(self, application_id: int, endpoint_id: str) -> EndpointRecord:
        found = self._store.find(application_id, endpoint_id)
        if found is None:
            raise NotFound(f"endpoint: no webhook endpoint {endpoint_id!r} in this application")
        return found

    def update(
        self,
        application_id: int,
        endpoint_id: str,
        *,
        url: str | None = None,
        events: Sequence[str] | None = None,
        enabled: bool | None = None,
    ) -> EndpointRecord:
        found = self.get(application_id, endpoint_id)
        self._store.update(
            found.pk,
            now=int(time.time()),
            url=None if url is None else check_url(url, self._allowed, allow_http=self._allow_http),
            events=None if events is None else check_events(events),
            enabled=enabled,
        )
        return self.get(application_id, endpoint_id)

    def delete(self, application_id: int, endpoint_id: str) -> None:
        self._store.delete(self.get(application_id, endpoint_id).pk)

    def roll_secret(
        self, application_id: int, endpoint_id: str, *, grace: int = GRACE_SECONDS
    ) -> Created:
        """A new secret; the current one signs too for ``grace`` seconds more."""
        found = self.get(application_id, endpoint_id)
        secret = new_secret()
        now = int(time.time())
        self._store.roll(
            found.pk,
            sealed_secret=seal_secret(secret, self._passphrase),
            previous_until=now + grace,
            now=now,
        )
        return Created(self.get(application_id, endpoint_id), secret)
