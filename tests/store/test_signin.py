"""The sign-in page and the tokens under hostile use: CSRF, guessed codes, forged and foreign tokens."""

from __future__ import annotations

import secrets
from pathlib import Path

from sqlalchemy import text
from typer.testing import CliRunner

from pkgcat.cli import app as cli
from pkgcat.http.store_page import COOKIE
from pkgcat.storage.engine import engine_for
from tests.conftest import Api, AppFactory
from tests.store.conftest import Mailbox, store_settings
from tests.store.sileo import Sileo, hidden_fields

BASE = "/store/"


def _email_page(shop: Api) -> str:
    page = shop.http.get(f"{BASE}authenticate", params={"udid": "abc123", "model": "iPhone14,2"})
    assert page.status_code == 200
    body: str = page.text
    return body


def test_the_page_has_a_strict_policy_and_refuses_a_post_without_its_csrf_cookie(
    shop: Api,
) -> None:
    page = shop.http.get(f"{BASE}authenticate", params={"udid": "abc123", "model": "iPhone14,2"})
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy
    assert "form-action 'self' sileo:" in policy
    assert "frame-ancestors 'none'" in policy
    assert "script-src" not in policy
    fields = hidden_fields(page.text)
    assert fields["csrf"]
    # Another site's form: the browser sends no SameSite=Strict cookie with it.
    shop.http.cookies.clear()
    forged = shop.http.post(f"{BASE}authenticate/email", data=fields | {"email": "a@b.test"})
    assert forged.status_code == 403
    assert "start again" in forged.text
    # A cookie of its own, but a field that does not match it.
    _email_page(shop)
    wrong = shop.http.post(
        f"{BASE}authenticate/email", data=fields | {"csrf": "x" * 43, "email": "a@b.test"}
    )
    assert wrong.status_code == 403


def test_the_page_escapes_what_the_device_sends(shop: Api) -> None:
    page = shop.http.get(
        f"{BASE}authenticate", params={"udid": "abc123", "model": '<script>alert(1)</script>"'}
    )
    assert "<script>" not in page.text
    assert "&lt;script&gt;" in page.text


def _code_form(shop: Api, mailbox: Mailbox, email: str) -> tuple[dict[str, str], str]:
    """The code form's fields after asking for a code, and the code the mail brought."""
    sent = shop.http.post(
        f"{BASE}authenticate/email", data=hidden_fields(_email_page(shop)) | {"email": email}
    )
    assert sent.status_code == 200, sent.text
    return hidden_fields(sent.text), mailbox.code_for(email)


def test_a_code_works_once(shop: Api, mailbox: tuple[Mailbox, int]) -> None:
    fields, code = _code_form(shop, mailbox[0], "once@example.test")
    post = {"data": fields | {"code": code}, "follow_redirects": False}
    assert shop.http.post(f"{BASE}authenticate/code", **post).status_code == 303
    _email_page(shop)  # the redirect dropped the CSRF cookie; the page sets it again
    again = shop.http.post(
        f"{BASE}authenticate/code",
        data=hidden_fields(_email_page(shop)) | {"email": "once@example.test", "code": code},
        follow_redirects=False,
    )
    assert again.status_code == 400
    assert "wrong, expired or used" in again.text


def test_a_guessed_code_is_throttled_even_when_right(
    shop: Api, mailbox: tuple[Mailbox, int]
) -> None:
    fields, code = _code_form(shop, mailbox[0], "guess@example.test")
    wrong = f"{(int(code) + 1) % 10**6:06d}"
    answers = [
        shop.http.post(f"{BASE}authenticate/code", data=fields | {"code": wrong}).status_code
        for _ in range(40)
    ]
    # The allowance (5 tries in 15 minutes) says why each try failed, then every try is refused.
    assert answers[:5] == [400] * 5
    assert set(answers[5:]) == {429}
    right = shop.http.post(
        f"{BASE}authenticate/code", data=fields | {"code": code}, follow_redirects=False
    )
    assert right.status_code == 429  # a throttled guesser never learns which guess was right
    assert "too many" in right.text


def test_an_expired_code_is_refused(
    shop: Api, mailbox: tuple[Mailbox, int], database_url: str
) -> None:
    page = _email_page(shop)
    sent = shop.http.post(
        f"{BASE}authenticate/email", data=hidden_fields(page) | {"email": "late@example.test"}
    )
    code = mailbox[0].code_for("late@example.test")
    engine = engine_for(database_url)
    try:
        with engine.begin() as db:
            db.execute(text("UPDATE buyer_codes SET expires_at = expires_at - 3600"))
    finally:
        engine.dispose()
    late = shop.http.post(
        f"{BASE}authenticate/code", data=hidden_fields(sent.text) | {"code": code}
    )
    assert late.status_code == 400
    assert "expired" in late.text


def test_forged_foreign_and_revoked_tokens_are_refused_with_invalidate(
    shop: Api, mailbox: tuple[Mailbox, int], cli_env: dict[str, str]
) -> None:
    forged = Sileo(shop.http, BASE, token="pst_" + "A" * 43)
    answer = forged.user_info()
    assert answer.status_code == 401
    assert answer.json()["invalidate"] is True

    mine = Sileo(shop.http, BASE)
    assert mine.sign_in(mailbox[0], "mine@example.test").status_code == 303
    # The same token from another device: refused, and dropped there.
    thief = Sileo(shop.http, BASE, udid="ffff0000ffff0000", token=mine.token)
    stolen = thief.user_info()
    assert stolen.status_code == 401
    assert stolen.json()["invalidate"] is True
    # A right token with a wrong payment secret buys nothing.
    mine_bad_secret = Sileo(shop.http, BASE, token=mine.token, payment_secret="pss_wrong")
    assert mine_bad_secret.purchase("com.alpha.paid").status_code == 401
    assert mine.user_info().json()["items"] == []

    other = Sileo(shop.http, BASE)
    assert other.sign_in(mailbox[0], "other@example.test").status_code == 303
    assert other.purchase("com.alpha.paid").json() == {"status": 0}
    # One buyer's purchase is not another's.
    assert mine.package_info("com.alpha.paid").json()["purchased"] is False
    assert mine.authorize_download("com.alpha.paid", "2.0", BASE).status_code == 403

    # The operator revokes a buyer: every device of theirs is told to drop its token.
    listed = CliRunner().invoke(cli, ["buyer", "list", "--json"], env=cli_env)
    assert listed.exit_code == 0, listed.output
    assert '"other@example.test"' in listed.output
    revoked = CliRunner().invoke(cli, ["buyer", "revoke", "Other@example.test"], env=cli_env)
    assert revoked.exit_code == 0, revoked.output
    answer = other.user_info()
    assert answer.status_code == 401
    assert answer.json()["invalidate"] is True
    unknown = CliRunner().invoke(cli, ["buyer", "revoke", "nobody@example.test"], env=cli_env)
    assert unknown.exit_code == 1


def test_without_a_platform_nothing_is_bought_and_no_row_is_written(
    make_api: AppFactory,
    sold: dict[str, Path],
    cli_env: dict[str, str],
    mailbox: tuple[Mailbox, int],
    database_url: str,
) -> None:
    shop = make_api(
        blob_dir=cli_env["PKGCAT_BLOB_DIR"], **store_settings(mailbox[1], store_platform="none")
    )
    device = Sileo(shop.http, BASE)
    assert device.sign_in(mailbox[0], "none@example.test").status_code == 303
    assert device.package_info("com.alpha.paid").json()["available"] is False
    refused = device.purchase("com.alpha.paid")
    assert refused.status_code == 400
    assert "not for sale" in refused.json()["error"]
    engine = engine_for(database_url)
    try:
        with engine.connect() as db:
            rows = db.execute(
                text("SELECT count(*) FROM purchases WHERE nickname = 'none@example.test'")
            ).scalar()
    finally:
        engine.dispose()
    assert rows == 0


def test_the_cydia_gate_is_off_by_default_and_matches_device_headers_when_on(
    make_api: AppFactory,
    sold: dict[str, Path],
    cli_env: dict[str, str],
    mailbox: tuple[Mailbox, int],
) -> None:
    settings = store_settings(mailbox[1])
    shop = make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], **settings)
    device = Sileo(shop.http, BASE)
    assert device.sign_in(mailbox[0], "cydia@example.test").status_code == 303
    assert device.purchase("com.alpha.paid").json() == {"status": 0}
    url = device.authorize_download("com.alpha.paid", "2.0", BASE).json()["url"]
    path = url.removeprefix("http://testserver").partition("?")[0]
    headers = {"X-Unique-ID": device.udid, "X-Machine": device.model}
    assert shop.http.get(path, headers=headers).status_code == 402
    gated = make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], store_cydia_gate=True, **settings)
    assert gated.http.get(path, headers=headers).status_code == 200
    someone = {"X-Unique-ID": "0000aaaa", "X-Machine": device.model}
    assert gated.http.get(path, headers=someone).status_code == 403


def test_without_a_store_there_is_no_payment_endpoint_nor_store(
    make_api: AppFactory, sold: dict[str, Path], cli_env: dict[str, str]
) -> None:
    plain = make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"])
    assert plain.http.get("/repo/payment_endpoint").status_code == 404
    assert plain.http.get("/store/info").status_code == 404


def test_a_mail_server_that_cannot_be_reached_is_said_plainly(
    make_api: AppFactory, sold: dict[str, Path], cli_env: dict[str, str]
) -> None:
    from tests.servers import free_port

    shop = make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], **store_settings(free_port()))
    sent = shop.http.post(
        f"{BASE}authenticate/email",
        data=hidden_fields(_email_page(shop)) | {"email": "nomail@example.test"},
    )
    assert sent.status_code == 503
    assert "could not be sent" in sent.text


def test_guesses_are_counted_in_redis_when_the_limit_is_shared(
    make_api: AppFactory,
    sold: dict[str, Path],
    cli_env: dict[str, str],
    mailbox: tuple[Mailbox, int],
    redis_url: str,
) -> None:
    """Two servers sharing one Redis: the allowance is one, whichever server is asked."""
    settings = store_settings(
        mailbox[1], redis_url=redis_url, rate_limit_namespace=f"store-{secrets.token_hex(4)}"
    )
    one = make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], **settings)
    two = make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], **settings)
    fields, code = _code_form(one, mailbox[0], "shared@example.test")
    wrong = f"{(int(code) + 1) % 10**6:06d}"
    for server in (one, two, one, two, one):
        server.http.cookies.set(COOKIE, fields["csrf"], path="/store/")
        tried = server.http.post(f"{BASE}authenticate/code", data=fields | {"code": wrong})
        assert tried.status_code == 400
    two.http.cookies.set(COOKIE, fields["csrf"], path="/store/")
    right = two.http.post(f"{BASE}authenticate/code", data=fields | {"code": code})
    assert right.status_code == 429


def test_the_store_s_own_address_says_how_to_buy(
    make_api: AppFactory,
    sold: dict[str, Path],
    cli_env: dict[str, str],
    mailbox: tuple[Mailbox, int],
) -> None:
    """The address `pkgcat demo` prints for the store is a page a person can open: what the
    store sells, from which repository, how a device buys, and, served over http, that Sileo
    and Zebra buy only over https (PaymentManager.swift's ``endpointURL.isSecure``; Zebra's
    ZBPaymentVendor.m ``supportsPaymentAPI``)."""
    shop = make_api(
        blob_dir=cli_env["PKGCAT_BLOB_DIR"],
        **store_settings(
            mailbox[1], store_name="<b>Alpha</b> & co", repository_url="http://testserver/repo/"
        ),
    )
    page = shop.http.get(BASE)
    assert page.status_code == 200, page.text
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "&lt;b&gt;Alpha&lt;/b&gt; &amp; co" in page.text
    assert "<b>Alpha</b>" not in page.text
    assert "http://testserver/repo/" in page.text
    assert "Sileo or Zebra" in page.text
    assert "Test mode" in page.text
    assert "only over https" in page.text
    secure = make_api(
        blob_dir=cli_env["PKGCAT_BLOB_DIR"],
        **store_settings(mailbox[1], store_url="https://shop.example.test/store/"),
    )
    answer = secure.http.get(BASE)
    assert answer.status_code == 200, answer.text
    assert "only over https" not in answer.text
