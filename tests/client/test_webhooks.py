"""pkgcat.client.webhooks.verify: genuine and fresh, or a clear error."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import time
from datetime import UTC, datetime
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
import standardwebhooks

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


def test_the_plain_hmac_check_of_the_docs_agrees_with_verify() -> None:
    page = (Path(__file__).parents[2] / "docs" / "webhooks.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "def genuine" in b]
    namespace: dict[str, Any] = {}
    exec(block, namespace)  # noqa: S102 - the documentation's own example, run as written
    now = int(time.time())
    header = f"t={now},v1={sign(BODY, SECRET, now)}"
    assert webhooks.verify(BODY, header, SECRET)["id"] == "evt_1"
    assert namespace["genuine"](BODY, header, SECRET) is True
    assert namespace["genuine"](BODY + b" ", header, SECRET) is False
    assert namespace["genuine"](BODY, header, "whsec_other") is False
    stale = f"t={now - 301},v1={sign(BODY, SECRET, now - 301)}"
    assert namespace["genuine"](BODY, stale, SECRET) is False


# Standard Webhooks: the headers its own library signs (standard-webhooks/standard-webhooks,
# libraries/python/standardwebhooks/webhooks.py, Webhook.sign: "v1," and the base64 HMAC-SHA256
# of "{msg_id}.{timestamp}.{data}", keyed by the base64-decoded secret after whsec_).
SHOWN = "whsec_FWEHD3sn78M0xIT6NPcvMKIWewxjwmajAOf-CgOVY_g"
"""A secret as pkgcat shows one: whsec_ and base64url (this one with a - and a _)."""


def standard_headers(body: bytes, secret: str, t: int, msg_id: str = "evt_1") -> dict[str, str]:
    signed = standardwebhooks.Webhook(webhooks.standard_secret(secret)).sign(
        msg_id, datetime.fromtimestamp(t, UTC), body.decode()
    )
    return {"webhook-id": msg_id, "webhook-timestamp": str(t), "webhook-signature": signed}


def test_the_standard_spelling_is_the_same_key_in_the_alphabet_the_libraries_read() -> None:
    spelt = webhooks.standard_secret(SHOWN)
    assert spelt == "whsec_FWEHD3sn78M0xIT6NPcvMKIWewxjwmajAOf+CgOVY/g="
    assert webhooks.standard_secret(spelt) == spelt
    raw = base64.urlsafe_b64decode(SHOWN.removeprefix("whsec_") + "=")
    moment = datetime.fromtimestamp(NOW, UTC)

    def signed_by(secret: str) -> str | None:
        try:
            return standardwebhooks.Webhook(secret).sign("evt_1", moment, BODY.decode())
        except binascii.Error:
            return None

    mac = hmac.new(raw, f"evt_1.{NOW}.".encode() + BODY, hashlib.sha256).digest()
    assert signed_by(spelt) == "v1," + base64.b64encode(mac).decode()
    # Given as shown, the library drops the - and _ and reads another key, or none.
    assert signed_by(SHOWN) != signed_by(spelt)
    with pytest.raises(ValueError, match="not whsec_ and base64"):
        webhooks.standard_secret("whsec_")


def test_standard_webhooks_headers_verify_with_either_spelling_of_the_secret() -> None:
    headers = standard_headers(BODY, SHOWN, NOW)
    assert webhooks.verify(BODY, headers, SHOWN, now=NOW + 10)["id"] == "evt_1"
    assert webhooks.verify(BODY, headers, webhooks.standard_secret(SHOWN), now=NOW)["id"] == "evt_1"
    # During a roll, two signatures, space-separated: either secret verifies.
    other = standard_headers(BODY, SECRET, NOW)["webhook-signature"]
    rolled = headers | {"webhook-signature": f"{other} {headers['webhook-signature']}"}
    assert webhooks.verify(BODY, rolled, SHOWN, now=NOW)["id"] == "evt_1"
    assert webhooks.verify(BODY, rolled, SECRET, now=NOW)["id"] == "evt_1"
    # Header names in any case, and http.server's message (not a Mapping) too.
    message = Message()
    for name, value in headers.items():
        message[name.title()] = value
    assert webhooks.verify(BODY, message, SHOWN, now=NOW)["id"] == "evt_1"


def test_pkgcat_signature_verifies_with_the_standard_spelling_too() -> None:
    header = f"t={NOW},v1={sign(BODY, SHOWN, NOW)}"
    for spelling in (SHOWN, webhooks.standard_secret(SHOWN)):
        assert webhooks.verify(BODY, header, spelling, now=NOW)["id"] == "evt_1"
        assert webhooks.verify(BODY, {"Pkgcat-Signature": header}, spelling, now=NOW)["id"]


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (
            {"webhook-id": "evt_2"},
            webhooks.SignatureMismatch,
            "no v1 signature of webhook-signature",
        ),
        ({"webhook-timestamp": str(NOW + 1)}, webhooks.SignatureMismatch, "webhook-signature"),
        ({"webhook-id": ""}, webhooks.UnknownSignatureScheme, "without webhook-id"),
        ({"webhook-timestamp": "soon"}, webhooks.UnknownSignatureScheme, "'soon' is not a number"),
        (
            {"webhook-signature": "v1a,AAAA"},
            webhooks.UnknownSignatureScheme,
            "has no v1, signature",
        ),
    ],
    ids=["other id", "other timestamp", "no id", "bad timestamp", "no v1"],
)
def test_a_standard_webhooks_header_changed_or_missing_is_named(
    change: dict[str, str], error: type[Exception], message: str
) -> None:
    headers = standard_headers(BODY, SHOWN, NOW) | change
    with pytest.raises(error, match=message):
        webhooks.verify(BODY, headers, SHOWN, now=NOW)


def test_a_stale_standard_webhooks_timestamp_or_no_signature_header_is_refused() -> None:
    headers = standard_headers(BODY, SHOWN, NOW)
    with pytest.raises(webhooks.StaleSignature, match="301 s old"):
        webhooks.verify(BODY, headers, SHOWN, now=NOW + 301)
    with pytest.raises(webhooks.UnknownSignatureScheme, match="neither a Pkgcat-Signature nor"):
        webhooks.verify(BODY, {"Content-Type": "application/json"}, SHOWN, now=NOW)
