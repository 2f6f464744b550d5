"""The store's pages: its sign-in page, opened by Sileo in the device's web sheet, and the
page at the store's own address, which tells a person what it sells and how a device buys.

``GET authenticate?udid=&model=`` asks for an email address; ``POST
authenticate/email`` mails a one-time code and asks for it; ``POST
authenticate/code`` checks it and redirects to
``sileo://authentication_success?token=...&payment_secret=...``, which hands the
sign-in to the app (the only time the two values leave the server).

Rendered here, with every value escaped. CSRF: the page sets a random token in a
cookie (HttpOnly, SameSite=Strict, Secure over https) and in a hidden field;
a POST whose two do not match is refused (the double-submit pattern). The CSP is
the dashboard's (our own origin only, no inline script or style, never framed),
with forms allowed to post to this origin and to hand over to ``sileo:``.
"""

from __future__ import annotations

import html
import secrets
from collections.abc import Callable
from importlib.resources import files
from urllib.parse import parse_qsl, urlencode

import orjson
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from pkgcat.store.service import Device, Store, StoreError, device

COOKIE = "pkgcat_store_csrf"
MAX_BODY = 16 * 1024
"""The largest body a store request may carry: a few fields."""

ClientOf = Callable[[Scope], str]
"""Names a request's client (its address, or its proxy's client): what throttles count."""
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "style-src 'self'",
        "img-src 'self'",
        "base-uri 'none'",
        "form-action 'self' sileo:",
        "frame-ancestors 'none'",
    )
)
"""Our own origin only; a form may post here, and the last step hands over to the app."""
HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
STYLE = b"""body{font:16px/1.5 -apple-system,system-ui,sans-serif;max-width:28em;margin:2em auto;padding:0 1em}
input,button{font:inherit;width:100%;box-sizing:border-box;padding:.6em;margin:.3em 0}
.error{color:#b00020}.test{background:#fff3cd;padding:.5em}
"""


async def fields(request: Request) -> dict[str, str]:
    """The body's fields, as JSON or as a form; strings only (others are ignored)."""
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise StoreError(f"the body is over {MAX_BODY} bytes", 413)
    if not raw:
        return {}
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if kind == "application/json":
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise StoreError("the body is not JSON") from None
        if not isinstance(parsed, dict):
            raise StoreError("the body is not a JSON object")
        return {k: v for k, v in parsed.items() if isinstance(v, str)}
    try:
        return dict(parse_qsl(raw.decode(), keep_blank_values=True))
    except UnicodeDecodeError:
        raise StoreError("the body is not UTF-8") from None


def _page(store: Store, title: str, body: str) -> str:
    banner = (
        '<p class="test">Test mode: nothing bought here is charged.</p>' if store.test_mode else ""
    )
    name = html.escape(store.name)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}: {name}</title>"
        '<link rel="stylesheet" href="/store/style.css"></head>'
        f"<body><h1>{name}</h1>{banner}{body}</body></html>\n"
    )


def _hidden(**values: str) -> str:
    return "".join(
        f'<input type="hidden" name="{name}" value="{html.escape(value)}">'
        for name, value in values.items()
    )


def _error(message: str | None) -> str:
    return f'<p class="error" role="alert">{html.escape(message)}</p>' if message else ""


def _home(store: Store) -> str:
    """What the store's own address says: what it sells, how a device buys, what it lacks."""
    name = html.escape(store.name)
    where = (
        f"the repository <code>{html.escape(store.repository)}</code>"
        if store.repository
        else "this server's repository"
    )
    body = (
        f"<p>{name} sells the paid packages of {where}. To buy one, add that repository as a"
        " source in Sileo or Zebra, open the package and tap its price: you sign in here with"
        " your email address and the code sent to it.</p>"
    )
    if store.console_mail:
        body += "<p>Sign-in codes are written to the server's log, not mailed.</p>"
    if not store.url.startswith("https://"):
        # Sileo takes a payment endpoint only when it is secure (PaymentManager.swift,
        # ``endpointURL.isSecure``), Zebra only an https one (``supportsPaymentAPI``).
        body += (
            '<p class="error">This store is served over plain http: Sileo and Zebra list its'
            " packages but buy only over https. Serve it behind TLS to sell to devices.</p>"
        )
    return _page(store, "Store", body)


def routes(store: Store, client_of: ClientOf) -> list[BaseRoute]:
    secure = store.url.startswith("https://")

    def respond(request: Request, body: str, csrf: str, status: int = 200) -> Response:
        response = HTMLResponse(body, status, HEADERS)
        if request.cookies.get(COOKIE) != csrf:
            response.set_cookie(
                COOKIE, csrf, httponly=True, samesite="strict", secure=secure, path="/store/"
            )
        return response

    def email_form(where: Device, csrf: str, error: str | None = None) -> str:
        return _page(
            store,
            "Sign in",
            "<p>Sign in with your email address: a code is mailed to you.</p>"
            f"{_error(error)}"
            '<form method="post" action="authenticate/email">'
            f"{_hidden(udid=where.udid, model=where.model, csrf=csrf)}"
            '<label for="email">Email address</label>'
            '<input id="email" name="email" type="email" autocomplete="email" required>'
            '<label for="gift_code">Gift code (if you were given one)</label>'
            '<input id="gift_code" name="gift_code" autocomplete="off" maxlength="40">'
            '<label for="discount_code">Discount code</label>'
            '<input id="discount_code" name="discount_code" autocomplete="off" maxlength="40">'
            '<button type="submit">Send me a code</button></form>',
        )

    def code_form(
        where: Device, email: str, csrf: str, error: str | None = None, **codes: str
    ) -> str:
        return _page(
            store,
            "Enter your code",
            f"<p>A code was sent to {html.escape(email)}.</p>{_error(error)}"
            '<form method="post" action="code">'
            f"{_hidden(udid=where.udid, model=where.model, email=email, csrf=csrf, **codes)}"
            '<label for="code">Code</label>'
            '<input id="code" name="code" inputmode="numeric" autocomplete="one-time-code"'
            ' pattern="[0-9]{6}" required>'
            '<button type="submit">Sign in</button></form>',
        )

    async def authenticate(request: Request) -> Response:
        try:
            where = device(request.query_params.get("udid"), request.query_params.get("model"))
        except StoreError as error:
            return HTMLResponse(_page(store, "Sign in", _error(str(error))), 400, HEADERS)
        csrf = request.cookies.get(COOKIE) or secrets.token_urlsafe(32)
        return respond(request, email_form(where, csrf), csrf)

    async def checked(request: Request) -> tuple[dict[str, str], Device] | Response:
        try:
            body = await fields(request)
            where = device(body.get("udid"), body.get("model"))
        except StoreError as error:
            return HTMLResponse(_page(store, "Sign in", _error(str(error))), error.status, HEADERS)
        cookie, field = request.cookies.get(COOKIE, ""), body.get("csrf", "")
        if not cookie or not secrets.compare_digest(cookie.encode(), field.encode()):
            message = "this form has expired or was not sent from this page; start again"
            return HTMLResponse(_page(store, "Sign in", _error(message)), 403, HEADERS)
        return body, where

    async def send_email(request: Request) -> Response:
        found = await checked(request)
        if isinstance(found, Response):
            return found
        body, where = found
        codes = {
            name: body.get(name, "").strip()[:40]
            for name in ("gift_code", "discount_code")
            if body.get(name, "").strip()
        }
        try:
            if "discount_code" in codes:
                # Checked before any code is mailed: a wrong one is said on this page.
                await store.check_discount(codes["discount_code"])
            email = await store.send_code(body.get("email", ""), client_of(request.scope))
        except StoreError as error:
            return respond(
                request, email_form(where, body["csrf"], str(error)), body["csrf"], error.status
            )
        return respond(request, code_form(where, email, body["csrf"], **codes), body["csrf"])

    async def check_code(request: Request) -> Response:
        found = await checked(request)
        if isinstance(found, Response):
            return found
        body, where = found
        email = body.get("email", "")
        try:
            token, secret = await store.sign_in(
                email, body.get("code", ""), client_of(request.scope), where
            )
        except StoreError as error:
            codes = {n: body[n] for n in ("gift_code", "discount_code") if body.get(n)}
            page = code_form(where, email, body["csrf"], str(error), **codes)
            return respond(request, page, body["csrf"], error.status)
        target = "sileo://authentication_success?" + urlencode(
            {"token": token, "payment_secret": secret}
        )
        done = await _codes_after_sign_in(body, email.strip().lower(), where)
        if done is not None:
            # Signed in all the same: the page says what became of the codes, and hands over.
            page = _page(
                store,
                "Signed in",
                f'{done}<p><a href="{html.escape(target, quote=True)}">Continue to Sileo</a></p>',
            )
            response = HTMLResponse(page, 200, HEADERS)
            response.delete_cookie(COOKIE, path="/store/")
            return response
        redirect = RedirectResponse(target, 303, headers=HEADERS)
        redirect.delete_cookie(COOKIE, path="/store/")
        return redirect

    async def _codes_after_sign_in(body: dict[str, str], email: str, where: Device) -> str | None:
        """Redeem the gift code and keep the discount code the buyer entered (checked again:
        another buyer may have taken a code meanwhile); None when each was taken, else what
        went wrong, for the buyer to read before going on."""
        told = []
        if gift := body.get("gift_code", "").strip():
            try:
                await store.redeem_gift(email, gift, where)
            except StoreError as error:
                told.append(_error(str(error)))
        if discount := body.get("discount_code", "").strip():
            try:
                await store.enter_discount(email, await store.check_discount(discount))
            except StoreError as error:
                told.append(_error(str(error)))
        return "".join(told) or None

    async def style(_request: Request) -> Response:
        return Response(
            STYLE, media_type="text/css", headers=HEADERS | {"cache-control": "no-cache"}
        )

    icon = files("pkgcat.repository").joinpath("CydiaIcon.png").read_bytes()

    async def store_icon(_request: Request) -> Response:
        return Response(
            icon, media_type="image/png", headers={"cache-control": "public, max-age=86400"}
        )

    async def home(_request: Request) -> Response:
        return HTMLResponse(_home(store), 200, HEADERS)

    return [
        Route("/", home),
        Route("/authenticate", authenticate),
        Route("/authenticate/email", send_email, methods=["POST"]),
        Route("/authenticate/code", check_code, methods=["POST"]),
        Route("/style.css", style),
        Route("/icon.png", store_icon),
    ]
