"""pkgcat.client.webhooks.verify: genuine and fresh, or a clear error."""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from pathlib import Path
from typing import Any

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
