"""An event as an endpoint receives it: JSON in its application's shape and time zone.

Every event has the same envelope::

    {"id": "evt_...", "type": "sale.completed", "created": "...", "source": "Alpha",
     "livemode": true, "test": false, "data": {...}}

``data`` and ``livemode`` are what the event's type declares (:mod:`pkgcat.events`),
written here in the endpoint's shape: a ``sale.*`` event's ``data`` is the sale as
``source/sales.json`` shows it (the same in both shapes), as it was when the event was
written; a ``package.*`` event's is the package as ``package/details.json`` shows it in the
application's shape, read when the event is sent (the latest details), or the published
version alone when the package is gone since.

``livemode`` is false when no real money is behind the event, as Stripe's events
say it (https://docs.stripe.com/api/events/object#event_object-livemode): a sale
whose payment platform is ``test`` (the store's test mode, :mod:`pkgcat.store.payments`,
or a purchase imported as such) and every sample event (``test``: true, sent by
hand). It is read from the sale's stored platform, so a retry says what the first
attempt said.

``created`` is written as the shape writes package dates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from pkgcat import events, models
from pkgcat.domain import Sale, Shape
from pkgcat.storage import rows
from pkgcat.storage.webhooks import StoredEvent


@dataclass(frozen=True, slots=True)
class _Shaped:
    """The values of events in one endpoint's shape and zone (:class:`events.Renderer`)."""

    shape: Shape
    zone: ZoneInfo
    package_row: Callable[[str], Any]

    def sale(self, sale: Sale) -> Mapping[str, Any]:
        return models.sale_body(sale, self.zone)

    def package(self, package: str, published: Mapping[str, Any]) -> Mapping[str, Any]:
        row = self.package_row(package)
        if row is None:
            return published
        return models.package_body(rows.package(row), self.shape, self.zone)


def render(
    event: StoredEvent,
    *,
    shape: Shape,
    zone: ZoneInfo,
    source: str,
    package_row: Callable[[str], Any],
    test: bool = False,
) -> bytes:
    """The body posted for ``event``; ``package_row`` reads a package's current row, or None."""
    declared = events.read(event.type, event.source_id, event.data)
    body = declared.body(_Shaped(shape, zone, package_row))
    envelope = {
        "id": event.event_id,
        "type": event.type,
        "created": models.moment(datetime.fromtimestamp(event.created_at, UTC), shape, zone),
        "source": source,
        "livemode": body.live and not test,
        "test": test,
        "data": body.data,
    }
    return orjson.dumps(envelope)
