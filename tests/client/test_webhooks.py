"""pkgcat.client.webhooks.verify: genuine and fresh, or a clear error."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from pkgcat.client import PkgcatError, webhooks

SECRET = "whsec_test-secret"
BODY = b'{"id":"evt_1","type":"sale.completed","data":{}}'
NOW = 1_700_000_000


def sign(body: bytes, secret: str, t: int) -> str:
    return hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()


def test_a_genuine_body_is_returned_parsed() -> None:
    header = f"t={NOW},v1={sign(BODY, SECRET, NOW)}"
    assert webhooks.verify(BODY, header, SECRET, now=NOW + 10)["id"] == "evt_1"
    assert webhooks.verify(BODY.decode(), header, SECRET, now=NOW - 10)["type"] == "sale.completed"


def test_any_of_several_signatures_may_match_during_a_roll() -> None:
    header = f"t={NOW},v1={sign(BODY, 'whsec_new', NOW)},v1={sign(BODY, SECRET, NOW)}"
    assert webhooks.verify(BODY, header, SECRET, now=NOW)["id"] == "evt_1"
    assert webhooks.verify(BODY, header, "whsec_new", now=NOW)["id"] == "evt_1"


@pytest.mark.parametrize(
    ("body", "secret"),
    [(BODY.replace(b"evt_1", b"evt_2"), SECRET), (BODY, "whsec_other")],
    ids=["changed body", "other secret"],
)
def test_a_changed_body_or_another_secret_is_a_mismatch(body: bytes, secret: str) -> None:
    header = f"t={NOW},v1={sign(BODY, SECRET, NOW)}"
    with pytest.raises(webhooks.SignatureMismatch, match="no v1 signature matches"):
        webhooks.verify(body, header, secret, now=NOW)


def test_a_changed_timestamp_is_a_mismatch() -> None:
    header = f"t={NOW + 1},v1={sign(BODY, SECRET, NOW)}"
    with pytest.raises(webhooks.SignatureMismatch):
        webhooks.verify(BODY, header, SECRET, now=NOW)


@pytest.mark.parametrize(("now", "word"), [(NOW + 301, "old"), (NOW - 301, "ahead")])
def test_a_timestamp_beyond_the_tolerance_is_stale(now: int, word: str) -> None:
    header = f"t={NOW},v1={sign(BODY, SECRET, NOW)}"
    with pytest.raises(
        webhooks.StaleSignature, match=f"301 s {word}, beyond the tolerance of 300 s"
    ):
        webhooks.verify(BODY, header, SECRET, now=now)
    assert webhooks.verify(BODY, header, SECRET, tolerance=600, now=now)["id"] == "evt_1"


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (f"v1={sign(BODY, SECRET, NOW)}", "no timestamp"),
        (f"t={NOW}", "no v1= signature"),
        (f"t={NOW},v0={sign(BODY, SECRET, NOW)}", "no v1= signature"),
        ("t=soon,v1=00", "'soon' is not a number"),
        ("", "no timestamp"),
    ],
)
def test_an_unknown_scheme_is_named(header: str, message: str) -> None:
    with pytest.raises(webhooks.UnknownSignatureScheme, match=message) as caught:
        webhooks.verify(BODY, header, SECRET, now=NOW)
    assert isinstance(caught.value, webhooks.WebhookVerificationError)
    assert isinstance(caught.value, PkgcatError)
