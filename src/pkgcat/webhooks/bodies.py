"""An event as an endpoint receives it: JSON in its application's shape and time zone.

Every event has the same envelope::

    {"id": "evt_...", "type": "sale.completed", "created": "...", "source": "Alpha",
     "livemode": true, "test": false, "data": {...}}

``livemode`` is false when no real money is behind the event, as Stripe's events
say it (https://docs.stripe.com/api/events/object#event_object-livemode): a sale
whose payment platform is ``test`` (the store's test mode, :mod:`pkgcat.store.payments`,
or a purchase imported as such) and every sample event (``test``: true, sent by
hand). It is read from the sale's stored platform, so a retry says what the first
attempt said.

``created`` is written as the shape writes package dates. ``data`` of a
``sale.*`` event is the sale as ``source/sales.json`` shows it (the same in both
shapes), as it was when the event was written. ``data`` of a ``package.*``
event is the package as ``package/details.json`` shows it in the application's
shape, read when the event is sent (the latest details), or the published
version alone when the package is gone since.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from pkgcat import models
from pkgcat.domain import Purchase, Sale, Shape
from pkgcat.storage import rows
from pkgcat.storage.webhooks import StoredEvent
from pkgcat.storage.writes.outbox import SALE_FACTS
from pkgcat.store.payments import TestPlatform


def _sale(stored: list[Any]) -> Sale:
    facts = dict(zip(SALE_FACTS, stored, strict=True))
    purchase = Purchase(
        nickname=facts["nickname"],
        status=facts["status"],
        total=Decimal(facts["total"]),
        commission=Decimal(facts["commission"]),
        currency=facts["currency"],
        purchased_at=datetime.fromtimestamp(facts["purchased_at"], UTC),
        txn_id=facts["txn_id"],
        profile_url=facts["profile_url"],
        allowed_for=facts["allowed_for"],
        payment_platform=facts["payment_platform"],
    )
    return Sale(purchase, facts["package"])


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
    facts = event.data
    data: dict[str, Any]
    livemode = not test
    if event.type.startswith("sale."):
        sale = _sale(facts)
        data = models.sale_body(sale, zone)
        livemode = livemode and sale.purchase.payment_platform != TestPlatform.name
    else:
        row = package_row(facts["package"])
        data = dict(facts) if row is None else models.package_body(rows.package(row), shape, zone)
    envelope = {
        "id": event.event_id,
        "type": event.type,
        "created": models.moment(datetime.fromtimestamp(event.created_at, UTC), shape, zone),
        "source": source,
        "livemode": livemode,
        "test": test,
        "data": data,
    }
    return orjson.dumps(envelope)
