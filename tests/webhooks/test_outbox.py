"""The outbox: events written in the transaction of the change, once per change."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from pkgcat import events as declared
from pkgcat.ingest import ImportOptions, import_repository
from pkgcat.ingest.operator_data import import_purchases
from pkgcat.storage import store
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.webhooks import WebhookStore
from pkgcat.webhooks.endpoints import Endpoints
from tests.debs import build_deb
from tests.ingest.conftest import stanza, write_repo
from tests.ingest.test_operator_data import PURCHASE, write_csv
from tests.repository.conftest import Publisher
from tests.webhooks.conftest import event_count, events

NOW = 1_711_886_400


def sale(txn: str, **over: str) -> dict[str, str]:
    return PURCHASE | {"txn_id": txn, "source": ""} | over


def test_sales_emit_once_per_change_and_only_where_heard(
    admin: CatalogueAdmin, endpoints: Endpoints, tmp_path: Path
) -> None:
    endpoints.create(1, "http://127.0.0.1:9/hook", ["sale.completed"])  # alpha-a: source Alpha
    rows = [sale("W-1"), sale("W-2", package="com.beta.paid", currency="EUR")]
    import_purchases(admin.engine, write_csv(tmp_path / "one.csv", rows))
    found = events(admin.engine)
    assert [(kind, source) for kind, source, _ in found] == [("sale.completed", 1)]
    facts = declared.read("sale.completed", 1, json.loads(found[0][2]))
    assert isinstance(facts, declared.SaleCompleted)
    assert (facts.txn_id, facts.package, facts.total) == ("W-1", "com.alpha.paid", "1.99")

    import_purchases(admin.engine, write_csv(tmp_path / "again.csv", rows))
    assert event_count(admin.engine) == 1  # the same rows again: nothing new

    changed = [sale("W-1", status="refunded"), sale("W-3", status="Chargeback")]
    import_purchases(admin.engine, write_csv(tmp_path / "later.csv", changed))
    assert [kind for kind, _, _ in events(admin.engine)] == [
        "sale.completed", "sale.refunded", "sale.chargeback",
    ]  # fmt: skip


def test_a_rolled_back_import_emits_nothing(
    admin: CatalogueAdmin, endpoints: Endpoints, tmp_path: Path
) -> None:
    endpoints.create(1, "http://127.0.0.1:9/hook", ["sale.completed"])
    file = write_csv(tmp_path / "sales.csv", [sale("R-1"), sale("R-2")])

    def refuse(_connection: Any) -> None:
        raise RuntimeError("the commit fails")

    event.listen(admin.engine, "commit", refuse)
    with pytest.raises(RuntimeError, match="the commit fails"):
        import_purchases(admin.engine, file)
    event.remove(admin.engine, "commit", refuse)
    assert event_count(admin.engine) == 0
    import_purchases(admin.engine, file)  # the same file, committed this time
    assert event_count(admin.engine) == 2


def test_a_source_without_endpoints_gets_no_events(
    admin: CatalogueAdmin, catalogue: dict[str, str], tmp_path: Path
) -> None:
    import_purchases(admin.engine, write_csv(tmp_path / "sales.csv", [sale("N-1")]))
    assert event_count(admin.engine) == 0


def test_publishing_emits_published_then_updated(
    pkgcat: Publisher, admin: CatalogueAdmin, endpoints: Endpoints, tmp_path: Path
) -> None:
    endpoints.create(1, "http://127.0.0.1:9/hook", ["package.published"])
    first = build_deb(tmp_path, "com.alpha.hooked", "1.0")
    assert pkgcat("publish", str(first), "--source", "Alpha").exit_code == 0
    assert pkgcat("publish", str(first), "--source", "Alpha").exit_code == 0  # same bytes
    second = build_deb(tmp_path, "com.alpha.hooked", "1.1")
    assert pkgcat("publish", str(second), "--source", "Alpha").exit_code == 0
    found = [(kind, json.loads(data)["version"]) for kind, _, data in events(admin.engine)]
    assert found == [("package.published", "1.0"), ("package.updated", "1.1")]


def test_a_repository_import_emits_for_new_and_changed_packages_alone(
    admin: CatalogueAdmin, endpoints: Endpoints, tmp_path: Path
) -> None:
    endpoints.create(3, "http://127.0.0.1:9/hook", ["package.updated"])  # beta-a: source Beta
    options = ImportOptions(source="Beta", jobs=1)
    write_repo(tmp_path, [stanza("com.beta.one", Name="One"), stanza("com.beta.two")])
    import_repository(admin.engine, str(tmp_path), options)
    import_repository(admin.engine, str(tmp_path), options)  # unchanged: nothing new
    write_repo(tmp_path, [stanza("com.beta.one", Name="One!"), stanza("com.beta.two")])
    import_repository(admin.engine, str(tmp_path), options)
    found = [(kind, json.loads(data)["package"]) for kind, _, data in events(admin.engine)]
    assert found == [
        ("package.published", "com.beta.one"),
        ("package.published", "com.beta.two"),
        ("package.updated", "com.beta.one"),
    ]


def test_pruning_keeps_what_an_endpoint_has_yet_to_pass(
    admin: CatalogueAdmin, endpoints: Endpoints, store: WebhookStore, tmp_path: Path
) -> None:
    made = endpoints.create(1, "http://127.0.0.1:9/hook", ["sale.completed"]).endpoint
    import_purchases(admin.engine, write_csv(tmp_path / "sales.csv", [sale("P-1"), sale("P-2")]))
    later = int(time.time()) + 1
    assert store.prune(before=later) == (0, 0)  # the endpoint has passed none of them
    first = store.events_after(1, made.position, limit=1)[0]
    (claimed,) = store.claim("me", lease_ms=10**6, limit=1, senders=1)
    assert store.advance(claimed.pk, "me", position=first.seq, delivered=[], lease_ms=None)
    assert store.prune(before=later - 3600) == (0, 0)  # passed, but not old enough
    assert store.prune(before=later) == (1, 0)
    assert [e.seq for e in store.events_after(1, 0, limit=10)] == [first.seq + 1]


def test_the_store_s_sales_and_refunds_emit_as_imported_ones_do(
    admin: CatalogueAdmin, endpoints: Endpoints
) -> None:
    """A purchase completed in the store, then refunded by its platform: two events, once each."""
    endpoints.create(1, "http://127.0.0.1:9/hook", ["sale.completed", "sale.refunded"])
    engine = admin.engine
    store.save_code(engine, "shop@example.test", "c" * 64, NOW + 600)
    buyer = store.sign_in(
        engine, "shop@example.test", "c" * 64, "t" * 64, "s" * 64, "udid1", "iPhone", NOW
    )
    assert buyer is not None
    bought = store.StorePurchase(
        source_id=1, package_id=1, buyer_id=buyer, email="shop@example.test", udid="udid1",
        model="iPhone", total="9.00", currency="USD", platform="test", txn_id="unused",
        purchased_at=NOW,
    )  # fmt: skip
    store.start_payment(engine, "pay_w", bought)
    for _ in range(3):  # told three times, applied once
        with engine.begin() as db:
            store.complete_payment(db, "pay_w", "txn_w", NOW + 5)
    with engine.begin() as db:
        assert store.record_refund(db, "test", "txn_w", "Refunded")
    with engine.begin() as db:
        assert not store.record_refund(db, "test", "txn_w", "Refunded")  # no change, no event
    # Stored as every sale's facts are (the order of test_the_facts_are_stored_as_...).
    assert [(kind, data) for kind, _, data in events(engine)] == [
        ("sale.completed", '["txn_w","com.alpha.paid","package","shop@example.test","Completed",'
         '"9.00","0.00","USD",1711886405,"","test"]'),
        ("sale.refunded", '["txn_w","com.alpha.paid","package","shop@example.test","Refunded",'
         '"9.00","0.00","USD",1711886405,"","test"]'),
    ]  # fmt: skip


def test_the_facts_are_stored_as_the_rows_already_in_the_outbox_are(
    pkgcat: Publisher, admin: CatalogueAdmin, endpoints: Endpoints, tmp_path: Path
) -> None:
    """An import's sales, a publish and a repository import: the stored text of each event's
    facts, as tests/webhooks/test_bodies.py reads rows back (an array of a sale's facts in one
    order, an object of a package's). The store's sales: the test before."""
    endpoints.create(1, "http://127.0.0.1:9/hook", ["sale.completed"])
    import_purchases(admin.engine, write_csv(tmp_path / "sales.csv", [sale("F-1")]))
    published = build_deb(tmp_path, "com.alpha.facts", "1.0")
    assert pkgcat("publish", str(published), "--source", "Alpha").exit_code == 0
    write_repo(tmp_path / "repo", [stanza("com.alpha.imported")])
    import_repository(admin.engine, str(tmp_path / "repo"), ImportOptions(source="Alpha", jobs=1))
    assert [(kind, data) for kind, _, data in events(admin.engine)] == [
        ("sale.completed", '["F-1","com.alpha.paid","package","ada","Completed","1.99","0.30",'
         '"USD",1710064800,"https://forum.example/u/ada","paypal"]'),
        ("package.published",
         '{"package":"com.alpha.facts","version":"1.0","architecture":"all"}'),
        ("package.published",
         '{"package":"com.alpha.imported","version":"1.0","architecture":"iphoneos-arm"}'),
    ]  # fmt: skip
