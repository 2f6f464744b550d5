"""``pkgcat deliver``: deliver webhook events in a process of its own until stopped."""

from __future__ import annotations

import signal
from types import FrameType

from pkgcat.cli._common import fail, load_settings, migrated, stderr
from pkgcat.storage.engine import engine_for
from pkgcat.storage.webhooks import WebhookStore
from pkgcat.webhooks.delivery import deliverer_for


def deliver() -> None:
    """Deliver webhook events until interrupted (with PKGCAT_WEBHOOK_DELIVERY=separate).

    Any number of these may run, on one host or several: each endpoint is
    delivered to by one of them at a time. Stopped by SIGINT or SIGTERM, it
    ends the attempts under way first.
    """
    settings = load_settings()
    if settings.webhook_passphrase is None:
        fail("PKGCAT_WEBHOOK_PASSPHRASE is not set: no signing secret could be opened", 2)
    migrated(settings)
    engine = engine_for(settings.database_url)
    deliverer = deliverer_for(settings, WebhookStore(engine))

    def stop(_signal: int, _frame: FrameType | None) -> None:
        deliverer.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    stderr.print(f"delivering webhooks as {deliverer.owner}", highlight=False)
    try:
        deliverer.run()
    finally:
        engine.dispose()
