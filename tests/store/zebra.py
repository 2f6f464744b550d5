"""A scripted client that speaks to the store as Zebra v1 does.

Written from Zebra's source, branch ``v1``, ``Zebra/Tabs/Sources/Helpers/ZBPaymentVendor.m``
(each method cites its own lines there). Its differences from Sileo: a sign-out with the
token alone, a null payment secret on a device without a passcode, and a signed-out package
view asked first as a GET with no body. Every request carries ``Accept: application/json``,
and a body (JSON) only on a POST (``_requestWithMethod:path:body:``).
An answer with ``invalidate`` signs the device out (``_errorWithBody:response:``, line 78).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from tests.store.sileo import Device

ACCEPT = {"accept": "application/json"}


@dataclass
class Zebra(Device):
    """The device, speaking as Zebra does (its sign-in made through the same web sheet)."""

    supports_get_package_info: bool = True
    """Zebra's per-source memory: once a GET of package info failed, it asks by POST only."""

    def _post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        response: httpx.Response = self.http.post(self.base + path, json=body, headers=ACCEPT)
        return response

    def sign_out(self) -> httpx.Response:
        """``signOut`` (lines 195-197): ``{token}`` alone, no device; the answer is not read."""
        return self._post("sign_out", {"token": self.token or "none"})

    def user_info(self) -> httpx.Response:
        """``getUserInfo:``: the token and the device."""
        return self._post(
            "user_info", {"token": self.token, "udid": self.udid, "device": self.model}
        )

    def package_info(self, package: str) -> list[httpx.Response]:
        """``getInfoForPackage:completion:`` (lines 254-291): signed out, a GET with no body
        first; on an error or an answer it cannot read, a POST with the device. Every
        request it sent, in order."""
        sent: list[httpx.Response] = []
        if self.token is None and self.supports_get_package_info:
            got: httpx.Response = self.http.get(
                f"{self.base}package/{package}/info", headers=ACCEPT
            )
            sent.append(got)
            if got.status_code < 300 and isinstance(_json(got), dict) and "error" not in got.json():
                return sent
            self.supports_get_package_info = False
        body: dict[str, Any] = {"udid": self.udid, "device": self.model}
        if self.token is not None:
            body["token"] = self.token
        sent.append(self._post(f"package/{package}/info", body))
        return sent

    def purchase(self, package: str) -> httpx.Response:
        """``initiatePurchaseForPackage:paymentSecret:`` (line 304): the secret, or JSON
        null when the device has no passcode (``getPaymentSecret:`` ignores that error)."""
        body = {
            "token": self.token,
            "payment_secret": self.payment_secret,  # None: serialised as null, as NSNull is
            "udid": self.udid,
            "device": self.model,
        }
        return self._post(f"package/{package}/purchase", body)

    def authorize_download(self, package: str, **params: str) -> httpx.Response:
        """``authorizeDownloadForPackage:params:``: the token (or ``none``),
        the device, and the download manager's parameters (version, repo, architecture)."""
        body: dict[str, Any] = {
            "token": self.token or "none",
            "udid": self.udid,
            "device": self.model,
            **params,
        }
        return self._post(f"package/{package}/authorize_download", body)


def _json(response: httpx.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return None


def zebra_paid(tag: str) -> bool:
    """Zebra's rule (ZBPackage.m:415, ``[tags containsObject:@"cydia::commercial"]``), over
    the tags as it splits them: at ``", "``, or at ``","`` when that made one piece."""
    tags = tag.split(", ")
    if len(tags) == 1 and "," in tags[0]:
        tags = tags[0].split(",")
    return "cydia::commercial" in tags
