"""Sileo's whole flow against the store, on SQLite and PostgreSQL: payment_endpoint to sign-out."""

from __future__ import annotations

import hashlib

import httpx

from tests.backends import rows
from tests.conftest import Api
from tests.repository.test_served import stanzas
from tests.store.conftest import MODEL, STORE, UDID, Mailbox
from tests.store.sileo import Sileo


def test_sileo_buys_and_downloads_a_paid_package_then_signs_out(
    shop: Api, mailbox: tuple[Mailbox, int], database_url: str
) -> None:
    http = shop.http
    endpoint = http.get("/repo/payment_endpoint")
    assert endpoint.status_code == 200
    assert endpoint.text.strip() == STORE
    assert http.get("/repo/sources/Alpha/payment_endpoint").text.strip() == STORE
    base = endpoint.text.strip().removeprefix("http://testserver")

    info = http.get(f"{base}info").json()
    assert info["name"] == "pkgcat"
    assert set(info["authentication_banner"]) == {"message", "button"}
    assert "test" in info["description"]

    device = Sileo(http, base)
    anonymous = device.package_info("com.alpha.paid").json()
    assert anonymous == {"price": "$1.99 (test)", "purchased": False, "available": True}

    done = device.sign_in(mailbox[0], "Buyer@Example.test")
    assert done.status_code == 303, done.text
    assert device.token is not None
    assert device.payment_secret is not None
    user = device.user_info().json()
    assert user == {
        "items": [],
        "user": {"name": "buyer@example.test", "email": "buyer@example.test"},
    }

    # Not bought yet: no download URL.
    refused = device.authorize_download("com.alpha.paid", "2.0", STORE)
    assert refused.status_code == 403
    assert "not bought" in refused.json()["error"]

    bought = device.purchase("com.alpha.paid")
    assert bought.json() == {"status": 0}
    assert device.package_info("com.alpha.paid").json()["purchased"] is True
    assert device.user_info().json()["items"] == ["com.alpha.paid"]
    # Bought again: already owned, no second purchase.
    assert device.purchase("com.alpha.paid").json() == {"status": 0}
    ledger = rows(
        database_url,
        "SELECT nickname, status, total, currency, payment_platform, udid, device_model, txn_id"
        " FROM purchases WHERE nickname = 'buyer@example.test'",
    )
    assert len(ledger) == 1
    assert ledger[0][:7] == ("buyer@example.test", "Completed", "1.99", "USD", "test", UDID, MODEL)
    assert str(ledger[0][7]).startswith("test_")

    # The sellers' API sees the sale with no path of its own.
    check = shop.get(
        "/1.0/package/check.json", shop.keys["alpha-a"], package="com.alpha.paid", udid=UDID
    )
    assert check.status_code == 200, check.text
    assert check.json()["response"]["owned"] in (True, 1, "1"), check.text

    url = device.authorize_download("com.alpha.paid", "2.0", STORE).json()["url"]
    assert url.startswith("http://testserver/repo/pool/")
    assert device.token not in url
    assert device.payment_secret not in url
    download = http.get(url.removeprefix("http://testserver"))
    assert download.status_code == 200
    # What apt checks: the bytes are the ones the signed index lists for this package.
    [listed] = [
        s for s in stanzas(http.get("/repo/Packages").content) if s["Package"] == "com.alpha.paid"
    ]
    assert hashlib.sha256(download.content).hexdigest() == listed["SHA256"]
    assert len(download.content) == int(listed["Size"])
    again = http.get(url.removeprefix("http://testserver"))
    assert again.status_code == 410

    assert device.sign_out().json() == {"success": True}
    after: httpx.Response = device.user_info()
    assert after.status_code == 401
    assert after.json()["invalidate"] is True
