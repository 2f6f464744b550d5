"""The store under ``/store/``: Sileo's payment provider API and its sign-in page.

A Starlette app the site mounts, off the API's hot path. The provider API
(developer.getsileo.app/payment-providers, also spoken by Zebra):

- ``GET info``: the store's name, icon, description and sign-in banner;
- ``GET authenticate?udid=&model=``: the sign-in page (:mod:`pkgcat.http.store_page`);
- ``POST user_info``, ``sign_out``, ``package/ID/info``, ``package/ID/purchase``,
  ``package/ID/authorize_download``: bodies as JSON or as a form, each with the
  device's ``udid`` and ``device`` (its model), but Zebra's ``sign_out``, which
  sends the token alone;
- ``GET package/ID/info``: what Zebra asks first when signed out, with no body
  (``ZBPaymentVendor.m``, ``getInfoForPackage``): the answer anyone may see.

Where Sileo and Zebra differ, and what is answered to each: docs/store.md.

Answers are JSON; an error is ``{"error": ..., "invalidate": true?}`` with its
HTTP status, ``invalidate`` telling the client to drop a token that is unknown,
revoked or another device's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from pkgcat.http import store_page
from pkgcat.http.store_page import ClientOf, fields
from pkgcat.store.service import Store, StoreError, device

log = logging.getLogger("pkgcat.store")

NO_STORE = {"cache-control": "no-store"}
STRIPE_MAX_BODY = 1024 * 1024
"""The largest webhook body read: Stripe's events are a few kilobytes."""


def json(body: object, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status, NO_STORE, media_type="application/json")


def refused(error: StoreError) -> Response:
    body: dict[str, object] = {"error": str(error)}
    if error.invalidate:
        body["invalidate"] = True
    return json(body, error.status)


Handler = Callable[[Request, dict[str, str]], Awaitable[dict[str, object]]]


def create_store_app(store: Store, client_of: ClientOf) -> Starlette:
    """The app mounted at ``/store``; ``client_of`` names a request's client (its address)."""

    def post(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                body = await fields(request)
                return json(await handler(request, body))
            except StoreError as error:
                return refused(error)

        return endpoint

    async def info(_request: Request) -> Response:
        body = {
            "name": store.name,
            "icon": f"{store.url}icon.png",
            "description": f"Buy packages of {store.name}"
            + (" (test mode: no money is taken)" if store.test_mode else ""),
            "authentication_banner": {
                "message": f"Sign in to {store.name} to buy and download paid packages.",
                "button": "Sign in",
            },
        }
        return json(body)

    async def user_info(_request: Request, body: dict[str, str]) -> dict[str, object]:
        return await store.user_info(
            body.get("token"), device(body.get("udid"), body.get("device"))
        )

    async def sign_out(_request: Request, body: dict[str, str]) -> dict[str, object]:
        # Zebra v1 sends {token} alone; a device, when named, must be the token's.
        named = "udid" in body or "device" in body
        where = device(body.get("udid"), body.get("device")) if named else None
        return await store.sign_out(body.get("token"), where)

    async def package_info(request: Request, body: dict[str, str]) -> dict[str, object]:
        where = device(body.get("udid"), body.get("device"))
        return await store.package_info(request.path_params["package"], body.get("token"), where)

    async def package_info_get(request: Request) -> Response:
        # Zebra's signed-out view: no token, no device, no body; a POST may follow.
        try:
            return json(await store.package_info(request.path_params["package"], None, None))
        except StoreError as error:
            return refused(error)

    async def purchase(request: Request, body: dict[str, str]) -> dict[str, object]:
        where = device(body.get("udid"), body.get("device"))
        package = request.path_params["package"]
        return await store.purchase(package, body.get("token"), body.get("payment_secret"), where)

    async def authorize(request: Request, body: dict[str, str]) -> dict[str, object]:
        where = device(body.get("udid"), body.get("device"))
        package = request.path_params["package"]
        return await store.authorize_download(
            package,
            body.get("token"),
            body.get("version"),
            body.get("architecture"),
            where,
            request.headers.get("user-agent"),
        )

    async def stripe_webhook(request: Request) -> Response:
        payload = b""
        async for chunk in request.stream():
            payload += chunk
            if len(payload) > STRIPE_MAX_BODY:
                return json({"error": "the event is too large"}, 413)
        try:
            applied = await store.stripe_event(payload, request.headers.get("stripe-signature", ""))
        except StoreError as error:
            log.warning("a Stripe webhook was refused: %s", error)
            return refused(error)
        return json({"received": True, "applied": applied})

    async def payment_return(_request: Request) -> Response:
        # Stripe's page sends the buyer back here; Sileo takes over and asks again.
        return RedirectResponse("sileo://payment_completed", 303, headers=NO_STORE)

    routes = [
        Route("/info", info),
        *store_page.routes(store, client_of),
        Route("/user_info", post(user_info), methods=["POST"]),
        Route("/sign_out", post(sign_out), methods=["POST"]),
        Route("/package/{package}/info", post(package_info), methods=["POST"]),
        Route("/package/{package}/info", package_info_get, methods=["GET"]),
        Route("/package/{package}/purchase", post(purchase), methods=["POST"]),
        Route("/package/{package}/authorize_download", post(authorize), methods=["POST"]),
        Route("/stripe/webhook", stripe_webhook, methods=["POST"]),
        Route("/payment/return", payment_return),
    ]
    app = Starlette(routes=routes)
    app.router.redirect_slashes = False
    return app
