"""Sends asked for by hand: a test event of any type, and one event again.

Both are posted at once, outside an endpoint's order and cursor, signed like any
delivery and logged with the endpoint's attempts; neither is retried. A test
event has ``"test": true`` (and ``"livemode": false``), a sample body and an id of its own, and is not
stored in the outbox: nothing about it needs a purchase or a package.
"""

from __future__ import annotations

import time

from pkgcat import events
from pkgcat.storage.webhooks import Attempt, StoredEvent, WebhookStore
from pkgcat.storage.writes.outbox import new_event_ids
from pkgcat.webhooks.delivery import Deliverer
from pkgcat.webhooks.endpoints import Endpoints, NotFound, check_events


def sample(kind: str, source_id: int, now: int) -> StoredEvent:
    """A made-up event of type ``kind``, as its type declares its sample (:mod:`pkgcat.events`)."""
    made = events.BY_NAME[kind].sample(source_id, now)
    (event_id,) = new_event_ids(1)
    return StoredEvent(0, event_id, kind, source_id, now, made.facts())


def send_test(
    endpoints: Endpoints, deliverer: Deliverer, application_id: int, endpoint_id: str, kind: str
) -> Attempt:
    """Post a sample event of type ``kind`` to the endpoint now."""
    (checked,) = check_events([kind])
    endpoint = endpoints.get(application_id, endpoint_id)
    event = sample(checked, endpoint.source_id, int(time.time()))
    return deliverer.post_now(endpoint, event, test=True)


def redeliver(
    endpoints: Endpoints,
    deliverer: Deliverer,
    store: WebhookStore,
    application_id: int,
    endpoint_id: str,
    event_id: str,
) -> Attempt:
    """Post the stored event ``event_id`` to the endpoint again, now."""
    endpoint = endpoints.get(application_id, endpoint_id)
    event = store.event(event_id)
    if event is None or event.source_id != endpoint.source_id:
        raise NotFound(f"event: no event {event_id!r} for this endpoint's source")
    return deliverer.post_now(endpoint, event, test=False)
