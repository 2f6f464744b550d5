"""A device on a package's whitelist owns it in the store and at Cydia's gate, as a purchase
would make it: the licence check's one question (pkgcat.storage.licences), asked by Sileo's
requests as PaymentProvider.swift sends them (tests/store/sileo.py)."""

from __future__ import annotations

import time
from pathlib import Path

from pkgcat.storage import store
from pkgcat.storage.engine import engine_for
from pkgcat.storage.writes import whitelist
from tests.conftest import Api, AppFactory
from tests.store.conftest import STORE, Mailbox, store_settings
from tests.store.sileo import Sileo

BASE = "/store/"


def whitelisted(database_url: str, package: str, udid: str) -> None:
    """The seller puts ``udid`` on ``package``'s whitelist."""
    engine = engine_for(database_url)
    try:
        found = store.for_sale(engine, package)
        assert found is not None
        whitelist.add(engine, found.id, [(udid, "a beta tester")], int(time.time()))
    finally:
        engine.dispose()


def test_a_whitelisted_device_gets_the_package_without_buying_it(
    shop: Api, mailbox: tuple[Mailbox, int], database_url: str
) -> None:
    device = Sileo(shop.http, BASE)
    assert device.sign_in(mailbox[0], "tester@example.test").status_code == 303
    assert device.package_info("com.alpha.paid").json()["purchased"] is False
    assert device.authorize_download("com.alpha.paid", "2.0", STORE).status_code == 403

    whitelisted(database_url, "com.alpha.paid", device.udid)
    assert device.package_info("com.alpha.paid").json()["purchased"] is True
    assert device.user_info().json()["items"] == ["com.alpha.paid"]
    # Owned: a purchase is not taken again, and the file is given.
    assert device.purchase("com.alpha.paid").json() == {"status": 0}
    url = device.authorize_download("com.alpha.paid", "2.0", STORE).json()["url"]
    assert shop.http.get(url.removeprefix("http://testserver")).status_code == 200
    # The same account on another device holds nothing: the whitelist names devices.
    other = Sileo(shop.http, BASE, udid="f" * 40)
    assert other.sign_in(mailbox[0], "tester@example.test").status_code == 303
    assert other.user_info().json()["items"] == []
    assert other.authorize_download("com.alpha.paid", "2.0", STORE).status_code == 403


def test_cydias_gate_opens_for_a_whitelisted_device(
    make_api: AppFactory,
    sold: dict[str, Path],
    cli_env: dict[str, str],
    mailbox: tuple[Mailbox, int],
    database_url: str,
) -> None:
    settings = store_settings(mailbox[1])
    gated = make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], store_cydia_gate=True, **settings)
    buyer = Sileo(gated.http, BASE)
    assert buyer.sign_in(mailbox[0], "buyer@example.test").status_code == 303
    assert buyer.purchase("com.alpha.paid").json() == {"status": 0}
    url = buyer.authorize_download("com.alpha.paid", "2.0", STORE).json()["url"]
    path = url.removeprefix("http://testserver").partition("?")[0]
    tester = {"X-Unique-ID": "0123abcd" * 5, "X-Machine": "iPad8,1"}
    assert gated.http.get(path, headers=tester).status_code == 403
    whitelisted(database_url, "com.alpha.paid", tester["X-Unique-ID"])
    assert gated.http.get(path, headers=tester).status_code == 200
