"""What Sileo and Zebra v1 really send and parse, against the store and its index (SQLite, PostgreSQL).

Each test is written from the client's source and cites it: Sileo/Sileo (c9f7015) and
zbrateam/Zebra (branch v1, c615ab4).
"""

from __future__ import annotations

import hashlib
from email.utils import parsedate_to_datetime
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from pkgcat.storage.engine import engine_for
from tests.conftest import Api
from tests.debs import build_deb
from tests.repository.conftest import Publisher
from tests.repository.test_served import stanzas, wait_for
from tests.store.conftest import STORE, Mailbox
from tests.store.sileo import IOS_14, IOS_15, Sileo, sileo_paid
from tests.store.zebra import Zebra, zebra_paid

BASE = "/store/"


def raw_tags(packages: bytes) -> dict[tuple[str, str], str]:
    """Each stanza's ``Tag`` line as the clients read it, by (package, architecture).

    Sileo's parser stops at a folded line of any field but ``Description``
    (ControlFileParserFast.c, ``parseControlFile``): the tag must fit its line.
    """
    found: dict[tuple[str, str], str] = {}
    for block in packages.decode().split("\n\n"):
        lines = block.strip("\n").split("\n")
        fields = {line.partition(":")[0]: line.partition(":")[2].strip() for line in lines}
        for i, line in enumerate(lines):
            if line.startswith("Tag:"):
                assert i + 1 == len(lines) or lines[i + 1][:1] not in (" ", "\t"), block
        found[fields["Package"], fields["Architecture"]] = fields.get("Tag", "")
    return found


def _rewind(database_url: str, seconds: int) -> None:
    """Move what the served Last-Modified is made of back in time, so that a later
    change shows a later one within the same second the test runs in."""
    engine = engine_for(database_url)
    try:
        with engine.begin() as db:
            db.execute(text("UPDATE deb_files SET stored_at = stored_at - :s"), {"s": seconds})
            db.execute(text("UPDATE packages SET updated_at = updated_at - :s"), {"s": seconds})
            db.execute(
                text("UPDATE repository_keys SET created_at = created_at - :s"), {"s": seconds}
            )
    finally:
        engine.dispose()


@pytest.fixture
def sold(pkgcat: Publisher, tmp_path: Path, database_url: str) -> dict[str, Path]:
    """What the store's ``shop`` serves here: a signing key; com.alpha.paid (1.99) for two
    architectures, com.alpha.other (4.99) with tags spelt with bare commas, com.alpha.free
    (0.00) tagged commercial by its own control file."""
    assert pkgcat("repo", "key", "create").exit_code == 0
    files = {
        "paid-arm": build_deb(tmp_path, "com.alpha.paid", "2.0", "iphoneos-arm"),
        "paid-arm64": build_deb(tmp_path, "com.alpha.paid", "2.0", "iphoneos-arm64"),
        "other": build_deb(
            tmp_path, "com.alpha.other", "1.0", "iphoneos-arm64", Tag="role::enduser,purpose::x"
        ),
        "free": build_deb(
            tmp_path,
            "com.alpha.free",
            "1.0",
            "iphoneos-arm64",
            Tag="cydia::commercial, role::enduser",
        ),
    }
    for path in files.values():
        result = pkgcat("publish", str(path), "--source", "Alpha")
        assert result.exit_code == 0, result.output
    _rewind(database_url, 3600)
    return files


def test_every_paid_stanza_is_tagged_as_both_clients_read_it_and_a_price_moves_the_tag(
    shop: Api, pkgcat: Publisher, tmp_path: Path
) -> None:
    """Row 1: a package priced above zero is paid to Sileo and Zebra; one priced zero is free
    to both, whatever its own control file says; an import of prices moves the tag, and a
    client asking with If-Modified-Since (Zebra's ZBDownloadManager.m,
    ``downloadPackagesFileWithExtension:``) is sent the new index."""
    first = shop.http.get("/repo/Packages")
    tags = raw_tags(first.content)
    paid = {("com.alpha.paid", "iphoneos-arm"), ("com.alpha.paid", "iphoneos-arm64")}
    paid.add(("com.alpha.other", "iphoneos-arm64"))
    for key, tag in tags.items():
        assert sileo_paid(tag) is (key in paid), (key, tag)
        assert zebra_paid(tag) is (key in paid), (key, tag)
    # The package's own tags are kept, in their order, after ours.
    assert tags["com.alpha.other", "iphoneos-arm64"] == (
        "cydia::commercial, role::enduser, purpose::x"
    )
    assert tags["com.alpha.free", "iphoneos-arm64"] == "role::enduser"
    # What the repository does agrees: the free file downloads, the paid one needs a URL.
    files = {(s["Package"], s["Architecture"]): s["Filename"] for s in stanzas(first.content)}
    assert shop.http.get(f"/repo/{files['com.alpha.free', 'iphoneos-arm64']}").status_code == 200
    assert shop.http.get(f"/repo/{files['com.alpha.paid', 'iphoneos-arm64']}").status_code == 402

    prices = tmp_path / "prices.csv"
    prices.write_text("package,price,currency\ncom.alpha.paid,0,USD\ncom.alpha.free,2.00,USD\n")
    assert pkgcat("import-prices", str(prices)).exit_code == 0

    def moved() -> bool:
        now = raw_tags(shop.http.get("/repo/Packages").content)
        return sileo_paid(now["com.alpha.free", "iphoneos-arm64"])

    wait_for(moved, "the price's tag in Packages")
    after = raw_tags(shop.http.get("/repo/Packages").content)
    assert not sileo_paid(after["com.alpha.paid", "iphoneos-arm64"])
    assert not zebra_paid(after["com.alpha.paid", "iphoneos-arm"])
    assert zebra_paid(after["com.alpha.free", "iphoneos-arm64"])
    assert after["com.alpha.free", "iphoneos-arm64"] == "cydia::commercial, role::enduser"
    since = first.headers["last-modified"]
    again = shop.http.get("/repo/Packages.xz", headers={"If-Modified-Since": since})
    assert again.status_code == 200
    assert parsedate_to_datetime(again.headers["last-modified"]) > parsedate_to_datetime(since)


def _bought(shop: Api, mailbox: Mailbox, email: str) -> Sileo:
    device = Sileo(shop.http, BASE)
    assert device.sign_in(mailbox, email).status_code == 303
    assert device.purchase("com.alpha.paid").json() == {"status": 0}
    return device


def _download(shop: Api, answer: httpx.Response) -> bytes:
    assert answer.status_code == 200, answer.text
    got: httpx.Response = shop.http.get(answer.json()["url"].removeprefix("http://testserver"))
    assert got.status_code == 200
    return got.content


def test_authorize_download_hands_back_the_file_of_the_architecture_asked_for(
    shop: Api, mailbox: tuple[Mailbox, int]
) -> None:
    """Row 2: a body that names the architecture (Zebra's, ZBDownloadManager.m:166-169:
    version, repo, architecture) chooses the file; no file of that architecture is a plain
    404, never another architecture's file, never a sign-out."""
    sileo = _bought(shop, mailbox[0], "arch@example.test")
    listed = {
        s["Architecture"]: s["SHA256"]
        for s in stanzas(shop.http.get("/repo/Packages").content)
        if s["Package"] == "com.alpha.paid"
    }
    zebra = Zebra(shop.http, BASE, token=sileo.token)
    params = {"version": "2.0", "repo": "https://shop.example.test/repo/"}
    for architecture in ("iphoneos-arm64", "iphoneos-arm"):
        body = zebra.authorize_download("com.alpha.paid", architecture=architecture, **params)
        assert hashlib.sha256(_download(shop, body)).hexdigest() == listed[architecture]

    missing = zebra.authorize_download("com.alpha.paid", architecture="iphoneos-arm64e", **params)
    assert missing.status_code == 404
    assert missing.json() == {
        "error": "no file of com.alpha.paid 2.0 for iphoneos-arm64e is served here"
        " (it is built for iphoneos-arm, iphoneos-arm64)"
    }
    assert sileo.user_info().status_code == 200  # still signed in
    unknown = zebra.authorize_download(
        "com.alpha.paid", architecture="iphoneos-arm64", version="9.9", repo=params["repo"]
    )
    assert unknown.status_code == 404
    assert "invalidate" not in unknown.json()
    no_version = sileo.post("package/com.alpha.paid/authorize_download", token=sileo.token)
    assert no_version.status_code == 400
    assert no_version.json() == {"error": "version is missing"}


def test_sileo_names_no_architecture_and_ios_14_gets_the_rootful_file(
    shop: Api, mailbox: tuple[Mailbox, int]
) -> None:
    """Sileo's body is the version and the repository alone (PaymentProvider.swift:231), so
    the store reads what it can of the device: its User-Agent's Darwin release
    (URLManager.swift, ``urlRequest``). Up to iOS 14 (Darwin 20) every jailbreak is rootful,
    so such a device gets the ``iphoneos-arm`` file; from iOS 15 on, rootful and rootless
    both exist and the one ``PKGCAT_ARCHITECTURES`` prefers is answered."""
    sileo = _bought(shop, mailbox[0], "darwin@example.test")
    listed = {
        s["Architecture"]: s["SHA256"]
        for s in stanzas(shop.http.get("/repo/Packages").content)
        if s["Package"] == "com.alpha.paid"
    }
    sileo.user_agent = IOS_14
    old = sileo.authorize_download("com.alpha.paid", "2.0", STORE)
    assert hashlib.sha256(_download(shop, old)).hexdigest() == listed["iphoneos-arm"]
    sileo.user_agent = IOS_15
    new = sileo.authorize_download("com.alpha.paid", "2.0", STORE)
    assert hashlib.sha256(_download(shop, new)).hexdigest() == listed["iphoneos-arm64"]


def test_a_download_url_asked_for_a_package_free_by_now_is_its_plain_address(
    shop: Api, mailbox: tuple[Mailbox, int]
) -> None:
    """A device that still holds an index from before a price of zero asks the store (Sileo
    only asks for a package it takes for paid: PaymentProvider.swift, ``downloadURL``); not
    bought by anyone, the file is given at its plain address, which needs no grant."""
    sileo = Sileo(shop.http, BASE)
    assert sileo.sign_in(mailbox[0], "stale@example.test").status_code == 303
    [free] = [
        s["Filename"]
        for s in stanzas(shop.http.get("/repo/Packages").content)
        if s["Package"] == "com.alpha.free"
    ]
    answer = sileo.authorize_download("com.alpha.free", "1.0", STORE)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"url": f"http://testserver/repo/{free}"}
    assert shop.http.get(f"/repo/{free}").status_code == 200
    # A paid one not bought is still refused.
    assert sileo.authorize_download("com.alpha.other", "1.0", STORE).status_code == 403


def test_zebra_signs_out_with_the_token_alone_and_the_token_stops_working(
    shop: Api, mailbox: tuple[Mailbox, int]
) -> None:
    """Row 3: Zebra's sign-out body is ``{token}`` (ZBPaymentVendor.m:195-197)."""
    sileo = Sileo(shop.http, BASE)
    assert sileo.sign_in(mailbox[0], "zebra-out@example.test").status_code == 303
    zebra = Zebra(shop.http, BASE, token=sileo.token, payment_secret=sileo.payment_secret)
    assert zebra.user_info().status_code == 200
    out = zebra.sign_out()
    assert out.status_code == 200, out.text
    assert out.json() == {"success": True}
    after = zebra.user_info()
    assert after.status_code == 401
    assert after.json()["invalidate"] is True
    # A token that is not one signs nothing out, and says so.
    assert Zebra(shop.http, BASE, token="pst_" + "B" * 43).sign_out().status_code == 401


def test_zebra_buys_with_a_null_payment_secret_and_stays_signed_in(
    shop: Api, mailbox: tuple[Mailbox, int]
) -> None:
    """Row 4: a device without a passcode sends ``payment_secret: null`` (ZBPaymentVendor.m:304);
    an answer with ``invalidate`` would sign the buyer out (ZBPaymentVendor.m:78)."""
    sileo = Sileo(shop.http, BASE)
    assert sileo.sign_in(mailbox[0], "nopasscode@example.test").status_code == 303
    zebra = Zebra(shop.http, BASE, token=sileo.token, payment_secret=None)
    bought = zebra.purchase("com.alpha.paid")
    assert bought.status_code == 200, bought.text
    assert bought.json() == {"status": 0}
    assert zebra.user_info().json()["items"] == ["com.alpha.paid"]
    # Sileo leaves the field out on such a device (PaymentProvider.swift, postRequest).
    assert sileo.post("package/com.alpha.other/purchase", token=sileo.token).json() == {"status": 0}
    # A secret that is sent must still be this sign-in's.
    wrong = Zebra(shop.http, BASE, token=sileo.token, payment_secret="pss_wrong")
    refused = wrong.purchase("com.alpha.paid")
    assert refused.status_code == 401
    assert refused.json()["invalidate"] is True


def test_zebra_signed_out_package_view_is_answered_by_its_first_get(shop: Api) -> None:
    """Row 5: signed out, Zebra asks ``GET package/ID/info`` with no body and retries as a
    POST only when that fails (ZBPaymentVendor.m:254-291)."""
    zebra = Zebra(shop.http, BASE)
    sent = zebra.package_info("com.alpha.paid")
    assert [r.request.method for r in sent] == ["GET"]
    assert sent[0].status_code == 200, sent[0].text
    assert sent[0].json() == {"price": "$1.99 (test)", "purchased": False, "available": True}
    assert zebra.supports_get_package_info
    # The same answer a signed-out Sileo gets by POST.
    assert Sileo(shop.http, BASE).package_info("com.alpha.paid").json() == sent[0].json()
    missing = zebra.package_info("com.alpha.nothing")
    assert missing[0].status_code == 404
    assert "invalidate" not in missing[0].json()
