"""A scripted client that speaks to the store as Sileo does (the payment provider API, v1)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from starlette.testclient import TestClient

from tests.store.conftest import MODEL, UDID, Mailbox

_HIDDEN = re.compile(r'<input type="hidden" name="(\w+)" value="([^"]*)">')


def hidden_fields(page: str) -> dict[str, str]:
    return {name: html.unescape(value) for name, value in _HIDDEN.findall(page)}


@dataclass
class Device:
    """One device: its UDID and model, and its sign-in once it has one."""

    http: TestClient
    base: str
    udid: str = UDID
    model: str = MODEL
    token: str | None = None
    payment_secret: str | None = None


IOS_15 = "Sileo/2.5.1 CoreFoundation/1858.112 Darwin/21.6.0"
"""Sileo's User-Agent on every request (URLManager.swift, ``urlRequest``: the app and its
version, CoreFoundation's, then the kernel's type and release: Darwin 21 is iOS 15)."""
IOS_14 = "Sileo/2.2.6 CoreFoundation/1775.118 Darwin/20.6.0"


@dataclass
class Sileo(Device):
    """The device, speaking as Sileo does."""

    user_agent: str = IOS_15

    def post(self, path: str, **body: Any) -> httpx.Response:
        sent = {"udid": self.udid, "device": self.model} | body
        response: httpx.Response = self.http.post(
            self.base + path, json=sent, headers={"user-agent": self.user_agent}
        )
        return response

    def sign_in(self, mailbox: Mailbox, email: str) -> httpx.Response:
        """The web sheet: the email form, the code from the mail, the redirect to sileo://."""
        page = self.http.get(
            f"{self.base}authenticate", params={"udid": self.udid, "model": self.model}
        )
        assert page.status_code == 200, page.text
        sent = self.http.post(
            f"{self.base}authenticate/email", data=hidden_fields(page.text) | {"email": email}
        )
        assert sent.status_code == 200, sent.text
        code = mailbox.code_for(email.strip().lower())  # the store keeps addresses lower-case
        done: httpx.Response = self.http.post(
            f"{self.base}authenticate/code",
            data=hidden_fields(sent.text) | {"code": code},
            follow_redirects=False,
        )
        if done.status_code == 303:
            target = urlsplit(done.headers["location"])
            assert (target.scheme, target.netloc) == ("sileo", "authentication_success")
            query = parse_qs(target.query)
            self.token = query["token"][0]
            self.payment_secret = query["payment_secret"][0]
        return done

    def user_info(self) -> httpx.Response:
        return self.post("user_info", token=self.token)

    def package_info(self, package: str) -> httpx.Response:
        return self.post(f"package/{package}/info", token=self.token)

    def purchase(self, package: str) -> httpx.Response:
        return self.post(
            f"package/{package}/purchase", token=self.token, payment_secret=self.payment_secret
        )

    def authorize_download(self, package: str, version: str, repo: str) -> httpx.Response:
        """``downloadURL(for:from:)`` (PaymentProvider.swift:231): the version and the
        repository, and nothing of the architecture (the body is those two, then the
        token and the device that ``postRequest`` adds)."""
        body = {"version": version, "repo": repo}
        return self.post(f"package/{package}/authorize_download", token=self.token, **body)

    def sign_out(self) -> httpx.Response:
        return self.post("sign_out", token=self.token)


def sileo_paid(tag: str) -> bool:
    """Sileo's rule (ControlFileParserFast.c:79, ``tagExists(rawTags, "::commercial", ...)``):
    the first ``::commercial`` of the raw value, taken at the value's end or when the byte
    two after it is a space or a comma."""
    at = tag.find("::commercial")
    if at < 0:
        return False
    end = at + len("::commercial")
    return end == len(tag) or tag[end + 1 : end + 2] in (" ", ",")
