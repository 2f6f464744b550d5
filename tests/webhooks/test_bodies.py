"""What an endpoint receives, byte for byte, from events as the outbox stores them.

The rows below are written as the outbox has written them since webhooks began (migration
0009): a ``sale.*`` event's facts as a JSON array, a ``package.*`` event's as an object.
Such rows stay in ``webhook_events`` across upgrades until delivered and pruned, so each is
read back and rendered here, in both shapes and in another time zone, and compared with the
exact bytes a receiver got before the events were declared in one module. On SQLite and
PostgreSQL. The sample events sent by hand (``webhook/test.json``) are pinned the same way.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import orjson
import pytest
from sqlalchemy import insert

from pkgcat import models
from pkgcat.domain import Shape
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.webhooks import WebhookStore
from pkgcat.webhooks import bodies, manual
from tests.conftest import Api

CREATED = 1_711_886_400  # 2024-03-31 12:00:00 UTC
ROWS = [
    # A package sale, a whole-source refund, a chargeback in the store's test mode.
    ("evt_1", "sale.completed", '["W-1","com.alpha.paid","package","ada","Completed","1.99",'
     '"0.30","USD",1711800000,"https://example.org/ada","paypal"]'),
    ("evt_2", "sale.refunded", '["W-2",null,"source","bob","Refunded","9.00","0.00","EUR",'
     '1711700000,"","stripe"]'),
    ("evt_3", "sale.chargeback", '["test_9f","com.alpha.paid","package","c@example.test",'
     '"Chargeback","1.99","0.00","USD",1711600000,"","test"]'),
    # A package still in the catalogue (its details now), and one gone since (as published).
    ("evt_4", "package.published",
     '{"package":"com.alpha.free","version":"1.2.3","architecture":"iphoneos-arm64"}'),
    ("evt_5", "package.updated",
     '{"package":"com.alpha.gone","version":"2.0","architecture":"all"}'),
]  # fmt: skip
PINNED = {
    ("evt_1", "A"): b'{"id":"evt_1","type":"sale.completed","created":"2024-03-31T12:00:00+00:00","source":"Alpha","livemode":true,"test":false,"data":{"txn_id":"W-1","date":"2024-03-30T12:00:00+00:00","package":"com.alpha.paid","allowed_for":"package","nickname":"ada","status":"Completed","gross":"1.99","commission":"0.30","fee":"0.00","net":"1.69","currency":"USD","payment_platform":"paypal"}}',
    ("evt_1", "B"): b'{"id":"evt_1","type":"sale.completed","created":"2024-03-31 14:00:00","source":"Alpha","livemode":true,"test":false,"data":{"txn_id":"W-1","date":"2024-03-30T13:00:00+01:00","package":"com.alpha.paid","allowed_for":"package","nickname":"ada","status":"Completed","gross":"1.99","commission":"0.30","fee":"0.00","net":"1.69","currency":"USD","payment_platform":"paypal"}}',
    ("evt_2", "A"): b'{"id":"evt_2","type":"sale.refunded","created":"2024-03-31T12:00:00+00:00","source":"Alpha","livemode":true,"test":false,"data":{"txn_id":"W-2","date":"2024-03-29T08:13:20+00:00","package":null,"allowed_for":"source","nickname":"bob","status":"Refunded","gross":"9.00","commission":"0.00","fee":"0.00","net":"9.00","currency":"EUR","payment_platform":"stripe"}}',
    ("evt_2", "B"): b'{"id":"evt_2","type":"sale.refunded","created":"2024-03-31 14:00:00","source":"Alpha","livemode":true,"test":false,"data":{"txn_id":"W-2","date":"2024-03-29T09:13:20+01:00","package":null,"allowed_for":"source","nickname":"bob","status":"Refunded","gross":"9.00","commission":"0.00","fee":"0.00","net":"9.00","currency":"EUR","payment_platform":"stripe"}}',
    ("evt_3", "A"): b'{"id":"evt_3","type":"sale.chargeback","created":"2024-03-31T12:00:00+00:00","source":"Alpha","livemode":false,"test":false,"data":{"txn_id":"test_9f","date":"2024-03-28T04:26:40+00:00","package":"com.alpha.paid","allowed_for":"package","nickname":"c@example.test","status":"Chargeback","gross":"1.99","commission":"0.00","fee":"0.00","net":"1.99","currency":"USD","payment_platform":"test"}}',
    ("evt_3", "B"): b'{"id":"evt_3","type":"sale.chargeback","created":"2024-03-31 14:00:00","source":"Alpha","livemode":false,"test":false,"data":{"txn_id":"test_9f","date":"2024-03-28T05:26:40+01:00","package":"com.alpha.paid","allowed_for":"package","nickname":"c@example.test","status":"Chargeback","gross":"1.99","commission":"0.00","fee":"0.00","net":"1.99","currency":"USD","payment_platform":"test"}}',
    ("evt_4", "A"): b'{"id":"evt_4","type":"package.published","created":"2024-03-31T12:00:00+00:00","source":"Alpha","livemode":true,"test":false,"data":DETAILS}',
    ("evt_4", "B"): b'{"id":"evt_4","type":"package.published","created":"2024-03-31 14:00:00","source":"Alpha","livemode":true,"test":false,"data":DETAILS}',
    ("evt_5", "A"): b'{"id":"evt_5","type":"package.updated","created":"2024-03-31T12:00:00+00:00","source":"Alpha","livemode":true,"test":false,"data":{"package":"com.alpha.gone","version":"2.0","architecture":"all"}}',
    ("evt_5", "B"): b'{"id":"evt_5","type":"package.updated","created":"2024-03-31 14:00:00","source":"Alpha","livemode":true,"test":false,"data":{"package":"com.alpha.gone","version":"2.0","architecture":"all"}}',
}  # fmt: skip
"""Each stored row's body in shape A (UTC) and shape B (Europe/Paris); ``DETAILS`` stands for
the package as ``package/details.json`` answers it to an application of that shape and zone."""

SAMPLES = {
    "sale.completed": b'{"id":"evt_sample","type":"sale.completed","created":"2024-03-31T12:00:00+00:00","source":"Alpha","livemode":false,"test":true,"data":{"txn_id":"TEST-0001","date":"2024-03-31T12:00:00+00:00","package":null,"allowed_for":"source","nickname":"test-buyer","status":"Completed","gross":"1.00","commission":"0.15","fee":"0.00","net":"0.85","currency":"USD","payment_platform":"test"}}',
    "sale.refunded": b'{"id":"evt_sample","type":"sale.refunded","created":"2024-03-31T12:00:00+00:00","source":"Alpha","livemode":false,"test":true,"data":{"txn_id":"TEST-0001","date":"2024-03-31T12:00:00+00:00","package":null,"allowed_for":"source","nickname":"test-buyer","status":"Refunded","gross":"1.00","commission":"0.15","fee":"0.00","net":"0.85","currency":"USD","payment_platform":"test"}}',
    "sale.chargeback": b'{"id":"evt_sample","type":"sale.chargeback","created":"2024-03-31T12:00:00+00:00","source":"Alpha","livemode":false,"test":true,"data":{"txn_id":"TEST-0001","date":"2024-03-31T12:00:00+00:00","package":null,"allowed_for":"source","nickname":"test-buyer","status":"Chargeback","gross":"1.00","commission":"0.15","fee":"0.00","net":"0.85","currency":"USD","payment_platform":"test"}}',
    "package.published": b'{"id":"evt_sample","type":"package.published","created":"2024-03-31T12:00:00+00:00","source":"Alpha","livemode":false,"test":true,"data":{"package":"com.example.test-event","version":"1.0","architecture":"all"}}',
    "package.updated": b'{"id":"evt_sample","type":"package.updated","created":"2024-03-31T12:00:00+00:00","source":"Alpha","livemode":false,"test":true,"data":{"package":"com.example.test-event","version":"1.0","architecture":"all"}}',
}  # fmt: skip
"""The sample event of each type, as ``webhook/test.json`` sends it (its id and time fixed)."""

AUDIENCES: dict[Shape, tuple[ZoneInfo, str]] = {
    "A": (ZoneInfo("UTC"), "alpha-a"),
    "B": (ZoneInfo("Europe/Paris"), "alpha-b"),
}
"""Each shape's zone, and the test application whose details answer stands for DETAILS."""


def details(api: Api, shape: Shape) -> bytes:
    """``package/details.json``'s answer for com.alpha.free to the shape's test application, as
    JSON bytes, its date moved to the shape's zone here (the test applications are in UTC)."""
    zone, application = AUDIENCES[shape]
    answer = api.get("/1.0/package/details.json", api.keys[application], package="com.alpha.free")
    body = answer.json()["response"]
    written = "%Y-%m-%dT%H:%M:%S%z" if shape == "A" else "%Y-%m-%d %H:%M:%S"
    stamp = datetime.strptime(body["date"], written).replace(tzinfo=UTC)
    body["date"] = models.moment(stamp, shape, zone)
    return orjson.dumps(body)


def test_stored_events_render_to_the_bytes_receivers_got(
    admin: CatalogueAdmin, store: WebhookStore, api: Api
) -> None:
    with admin.engine.begin() as db:
        for event_id, kind, data in ROWS:
            db.execute(
                insert(t.webhook_events).values(
                    event_id=event_id, type=kind, source_id=1, created_at=CREATED, data=data
                )
            )
    stored = store.events_after(1, 0, limit=len(ROWS))
    assert [e.event_id for e in stored] == [row[0] for row in ROWS]
    for shape, (zone, _) in AUDIENCES.items():
        shown = details(api, shape)
        for event in stored:
            body = bodies.render(
                event, shape=shape, zone=zone, source="Alpha", package_row=store.package_row
            )
            assert body == PINNED[event.event_id, shape].replace(b"DETAILS", shown), event.type


@pytest.mark.parametrize("kind", SAMPLES)
def test_each_sample_event_renders_as_before(kind: str) -> None:
    sample = dataclasses.replace(manual.sample(kind, 1, CREATED), event_id="evt_sample")
    body = bodies.render(
        sample, shape="A", zone=ZoneInfo("UTC"), source="Alpha", package_row=lambda _: None,
        test=True,
    )  # fmt: skip
    assert body == SAMPLES[kind]
