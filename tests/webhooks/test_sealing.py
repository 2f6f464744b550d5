"""Secrets sealed with a passphrase (pkgcat.sealing), as the webhooks use them: a passphrase
that is not the one they were sealed with is named by its own setting."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.webhooks import WebhookStore
from pkgcat.webhooks.delivery import Deliverer, DeliverySettings
from pkgcat.webhooks.endpoints import Endpoints
from pkgcat.webhooks.signing import Opener
from tests.webhooks.conftest import LOOPBACK, Receiver, import_sales, until


def test_a_webhook_passphrase_other_than_the_sealing_one_is_named_and_signs_nothing(
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    store: WebhookStore,
    receivers: Callable[[], Receiver],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server given another PKGCAT_WEBHOOK_PASSPHRASE than the secrets were sealed with: the
    log names that setting (it named the repository's before, whose keys were not at fault)."""
    receiver = receivers()
    made = endpoints.create(1, receiver.url, ["sale.completed"]).endpoint
    import_sales(admin.engine, tmp_path, ["K-1"])
    settings = DeliverySettings(timeout=5.0, retry_seconds=0.05)
    deliverer = Deliverer(store, Opener("another passphrase of some length"), LOOPBACK, settings)
    with caplog.at_level(logging.ERROR, logger="pkgcat.webhooks.delivery"):
        deliverer.start()
        try:
            until(lambda: "do not open" in caplog.text, "the named problem")
        finally:
            deliverer.stop(30)
    assert (
        f"webhook endpoint {made.endpoint_id}: the webhook endpoints' signing secrets do not open "
        "with PKGCAT_WEBHOOK_PASSPHRASE (it is not the passphrase they were sealed with)"
    ) in caplog.text
    assert "REPOSITORY" not in caplog.text
    assert receiver.arrived == 0
