"""The webhook endpoints as the API manages them: one application's own, nothing else.

The API's ``webhook/*`` operations call this; it holds what the operator's
``pkgcat webhook`` commands build per run (:class:`Endpoints`, a deliverer for
the manual sends) on the worker's write engine, opened at the first write as
uploads open it. Every call is synchronous (SQLAlchemy, and the manual sends
post at once): the HTTP layer runs it in a thread.

Every lookup goes through the caller's application id, so an endpoint id of
another application is answered exactly as one that does not exist.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Engine

from pkgcat.config import Settings
from pkgcat.sealing import seal
from pkgcat.storage.webhooks import Attempt, EndpointRecord, WebhookStore
from pkgcat.storage.writes.idempotency import Answers
from pkgcat.webhooks import manual
from pkgcat.webhooks.delivery import Deliverer, deliverer_for
from pkgcat.webhooks.endpoints import Created, Endpoints, allowance
from pkgcat.webhooks.signing import NoWebhookPassphrase, open_sealed


@dataclass(frozen=True, slots=True)
class AttemptPage:
    """A page of an endpoint's delivery log, newest first, and where the next one starts."""

    attempts: list[tuple[int, Attempt]]
    has_more: bool


class Managed:
    """An application's endpoints, its manual sends and its delivery log."""

    def __init__(self, settings: Settings, engine: Callable[[], Engine]) -> None:
        self._settings = settings
        self._engine = engine
        self._parts: tuple[WebhookStore, Endpoints, Deliverer] | None = None
        self._opening = threading.Lock()  # calls come from several threads at once
        ttl, bound = settings.idempotency_seconds, settings.idempotency_claim_seconds
        self.answers = Answers(engine, ttl=ttl, bound=bound)
        """The answers kept under an ``Idempotency-Key``, as uploads keep theirs."""
        self.sealed_answers = Answers(
            engine, ttl=ttl, bound=bound, seal=self._sealed, unseal=self._opened
        )
        """Those of the writes whose answer holds a signing secret: kept sealed, as the
        secret itself is."""

    def _open(self) -> tuple[WebhookStore, Endpoints, Deliverer]:
        with self._opening:
            return self._parts or self._build()

    def _build(self) -> tuple[WebhookStore, Endpoints, Deliverer]:
        if self._parts is None:
            settings = self._settings
            store = WebhookStore(self._engine())
            passphrase = settings.webhook_passphrase
            endpoints = Endpoints(
                store,
                passphrase=None if passphrase is None else passphrase.get_secret_value(),
                allowed=allowance(settings.fetch_allow, settings.webhook_allow_loopback),
                allow_http=settings.webhook_allow_loopback,
            )
            self._parts = (store, endpoints, deliverer_for(settings, store))
        return self._parts

    def close(self) -> None:
        """Close the manual sends' connections (the engine is the app's to dispose of)."""
        if self._parts is not None:
            self._parts[2].close()

    def create(self, application_id: int, url: str, events: Sequence[str]) -> Created:
        return self._open()[1].create(application_id, url, events)

    def list(self, application_id: int) -> list[EndpointRecord]:
        return self._open()[1].list(application_id)

    def update(
        self,
        application_id: int,
        endpoint_id: str,
        *,
        url: str | None,
        events: Sequence[str] | None,
        enabled: bool | None,
    ) -> EndpointRecord:
        return self._open()[1].update(
            application_id, endpoint_id, url=url, events=events, enabled=enabled
        )

    def delete(self, application_id: int, endpoint_id: str) -> None:
        self._open()[1].delete(application_id, endpoint_id)

    def roll_secret(self, application_id: int, endpoint_id: str) -> Created:
        return self._open()[1].roll_secret(application_id, endpoint_id)

    def send_test(self, application_id: int, endpoint_id: str, kind: str) -> Attempt:
        _, endpoints, deliverer = self._open()
        return manual.send_test(endpoints, deliverer, application_id, endpoint_id, kind)

    def redeliver(self, application_id: int, endpoint_id: str, event_id: str) -> Attempt:
        store, endpoints, deliverer = self._open()
        return manual.redeliver(endpoints, deliverer, store, application_id, endpoint_id, event_id)

    def _passphrase(self) -> str:
        passphrase = self._settings.webhook_passphrase
        if passphrase is None:
            raise NoWebhookPassphrase
        return passphrase.get_secret_value()

    def _sealed(self, body: bytes) -> bytes:
        return seal(body, self._passphrase()).encode("ascii")

    def _opened(self, body: bytes) -> bytes:
        return open_sealed(body.decode("ascii"), self._passphrase())

    def attempts(
        self, application_id: int, endpoint_id: str, *, limit: int, before: int | None
    ) -> AttemptPage:
        """``limit`` attempts of the endpoint older than the attempt ``before``, newest first."""
        store, endpoints, _ = self._open()
        pk = endpoints.get(application_id, endpoint_id).pk
        found = store.attempts(pk, limit=limit + 1, before=before)
        return AttemptPage(found[:limit], len(found) > limit)
