"""``livemode`` at the top of every event: false where no money moved, as Stripe's events say.

A sale made in the store's test mode (``PKGCAT_STORE_PLATFORM=test``), bought the way
Sileo buys, reaches a real receiver as ``livemode: false``; an imported sale of a real
platform as ``livemode: true``; a sample event as ``livemode: false``. On SQLite and
PostgreSQL. Stripe's own field: https://docs.stripe.com/api/events/object (``livemode``),
and tests/store/stripe_double.py's events carry it the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from pkgcat.client import webhooks
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.webhooks.delivery import Deliverer
from pkgcat.webhooks.endpoints import Endpoints
from pkgcat.webhooks.manual import send_test
from tests.conftest import Api
from tests.store.conftest import Mailbox, mailbox, shop, sold  # noqa: F401  # the store's fixtures
from tests.store.sileo import Sileo
from tests.webhooks.conftest import Receiver, import_sales, until


def test_a_test_mode_sale_says_livemode_false_and_a_real_one_true(
    shop: Api,  # noqa: F811  # the fixture imported above
    mailbox: tuple[Mailbox, int],  # noqa: F811
    admin: CatalogueAdmin,
    endpoints: Endpoints,
    receivers: Callable[[], Receiver],
    deliverers: Callable[..., Deliverer],
    tmp_path: Path,
) -> None:
    receiver = receivers()
    made = endpoints.create(1, receiver.url, ["sale.completed", "package.published"])
    device = Sileo(shop.http, "/store/")
    assert device.sign_in(mailbox[0], "buyer@example.test").status_code == 303
    assert device.purchase("com.alpha.paid").json() == {"status": 0}  # the test platform: done
    import_sales(admin.engine, tmp_path, ["LIVE-1"])  # payment_platform "paypal"
    deliverer = deliverers()
    until(lambda: len(receiver.answered()) == 2, "both sales")
    sent = send_test(endpoints, deliverer, 1, made.endpoint.endpoint_id, "package.published")
    assert sent.ok

    got = [
        webhooks.verify(d.body, d.headers["Pkgcat-Signature"], made.secret)
        for d in receiver.answered()
    ]
    store_sale, imported, sample = got
    assert store_sale["data"]["payment_platform"] == "test"
    assert (store_sale["livemode"], store_sale["test"]) == (False, False)
    assert imported["data"]["txn_id"] == "LIVE-1"
    assert (imported["livemode"], imported["test"]) == (True, False)
    assert (sample["type"], sample["livemode"], sample["test"]) == (
        "package.published", False, True,
    )  # fmt: skip
    # Every body has it, beside the other top-level fields, in the documented order, and the
    # documentation's example of a test-mode sale is shaped as the real one.
    for event in got:
        assert list(event) == ["id", "type", "created", "source", "livemode", "test", "data"]
    page = (Path(__file__).parents[2] / "docs" / "webhooks.md").read_text()
    examples = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", page, re.S)]
    (documented,) = [e for e in examples if e.get("livemode") is False]
    assert list(documented) == list(store_sale)
    assert list(documented["data"]) == list(store_sale["data"])
    assert documented["data"]["payment_platform"] == "test"
    assert documented["data"]["txn_id"].startswith("test_")
    assert store_sale["data"]["txn_id"].startswith("test_")
