"""The store's use cases, with no HTTP and no SQL: sign-in, ownership, purchases, downloads.

Errors are :class:`StoreError`, which the HTTP layer turns into Sileo's
``{error, recovery_url?, invalidate?}``: ``invalidate`` is set for a token that
is unknown, revoked or another device's, so the client drops its credentials.

Secrets: a sign-in code (6 digits), a token and a payment secret (32 random
bytes each) are shown once, to the buyer, and stored as SHA-256 only.
Throttles (``PKGCAT_STORE_CODE_LIMIT``, fixed windows read by ``limits``, in
memory or in Redis as the rate limit is): codes asked for and wrong codes
tried count against the email address and against the client's address, so a
code cannot be guessed faster than the allowance from anywhere.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import smtplib
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TypeVar

import anyio
from sqlalchemy import Engine

from pkgcat.config import Settings
from pkgcat.domain import UDID
from pkgcat.money.schedule import Schedule
from pkgcat.repository.debs import pool_path
from pkgcat.repository.keys import NoPassphrase
from pkgcat.repository.served import ServedRepository
from pkgcat.shop.errors import ShopRefused
from pkgcat.shop.quote import quote
from pkgcat.shop.values import Quote
from pkgcat.storage import store as db
from pkgcat.storage.backends import open_code_limiter
from pkgcat.storage.shop import discounts, gifts, prices
from pkgcat.store.mail import mailer_for
from pkgcat.store.payments import Payment
from pkgcat.store.platforms import money_platform_for, platform_for
from pkgcat.versions import Preference

EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s]{1,189}\.[^@\s.]{2,63}")
CODE = re.compile(r"[0-9]{6}")
DARWIN = re.compile(r"\bDarwin/(\d{1,3})\.")
"""The kernel's release in a client's User-Agent, as Sileo writes it (``Darwin/20.6.0``)."""
FIRST_ROOTLESS_DARWIN = 21
"""iOS 15's kernel: rootless jailbreaks (``iphoneos-arm64``) exist from iOS 15 on; before it,
every jailbreak is rootful (``iphoneos-arm``)."""
ROOTFUL = ("iphoneos-arm", "all")
T = TypeVar("T")
log = logging.getLogger("pkgcat.store")
SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}


class StoreError(Exception):
    """What the device is told; ``status`` is the HTTP status."""

    def __init__(self, message: str, status: int = 400, *, invalidate: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.invalidate = invalidate


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def display_price(price: str, currency: str) -> str:
    """The price as Sileo shows it: ``$4.99``, or ``4.99 CHF`` for a currency without a sign."""
    symbol = SYMBOLS.get(currency)
    return f"{symbol}{price}" if symbol else f"{price} {currency}"


@dataclass(frozen=True, slots=True)
class Device:
    udid: str
    model: str


def device(udid: str | None, model: str | None) -> Device:
    """The device a request names: every POST of the protocol carries it, but Zebra's
    ``sign_out`` (a token alone) and a signed-out ``GET package/ID/info`` (no body)."""
    if not udid or not UDID.fullmatch(udid):
        raise StoreError("udid is missing or malformed")
    model = (model or "").strip()
    if not model or len(model) > 64 or not model.isprintable():
        raise StoreError("device is missing or malformed")
    return Device(udid, model)


class Store:
    """The store of one worker: its database engine, mailer, platform and throttles."""

    def __init__(
        self,
        settings: Settings,
        served: ServedRepository,
        engine: Callable[[], Engine],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``engine``: the worker's engine, made at its first use (the caller disposes of it)."""
        assert settings.store_url is not None
        self.url = settings.store_url
        self.name = settings.store_name
        self.repository = settings.repository_url
        self.console_mail = settings.mail_backend == "console"
        self._engine = engine
        self._served = served
        self._mailer = mailer_for(settings)
        self._platform = platform_for(settings)
        self._webhook_secrets = tuple(
            secret.get_secret_value()
            for secret in (settings.stripe_webhook_secret, settings.stripe_connect_webhook_secret)
            if secret is not None
        )
        self._money = money_platform_for(settings)
        self._terms = db.SaleTerms(
            commission_percent=settings.commission_percent,
            hold_seconds=Schedule.of(settings).hold_seconds,
        )
        self._code_seconds = settings.store_code_seconds
        self._clock = clock
        self._downloads_base = _downloads_base(settings)
        self._limiter = open_code_limiter(settings)
        self._preference = Preference(settings.architecture_preference)

    @property
    def test_mode(self) -> bool:
        return self._platform is not None and self._platform.name == "test"

    def engine(self) -> Engine:
        """The worker's engine (:class:`pkgcat.storage.backends.WriteEngine`)."""
        return self._engine()

    def now(self) -> int:
        return int(self._clock())

    async def _run(self, function: Callable[..., T], *args: object) -> T:
        return await anyio.to_thread.run_sync(function, self.engine(), *args)

    async def _throttled(self, kind: str, email: str, client: str) -> None:
        """Count one attempt against the address and the client; refuse past the allowance."""
        for key in (f"{kind}:email:{email}", f"{kind}:client:{client}"):
            decision = await self._limiter.hit(key)
            if not decision.allowed:
                raise StoreError(
                    f"too many sign-in attempts; try again in {decision.reset_after} s", 429
                )

    # Sign-in ---------------------------------------------------------------------------

    async def send_code(self, email: str, client: str) -> str:
        """Mail a fresh code to ``email``; returns the address as stored (lower-case)."""
        email = email.strip().lower()
        if not EMAIL.fullmatch(email) or len(email) > 254:
            raise StoreError("that is not an email address")
        await self._throttled("send", email, client)
        code = f"{secrets.randbelow(10**6):06d}"
        await self._run(
            db.save_code, email, digest(f"{email}\n{code}"), self.now() + self._code_seconds
        )
        try:
            await self._mailer.send_code(email, code, self._code_seconds // 60)
        except (smtplib.SMTPException, OSError) as error:
            # The reason, never the code: the mail server's answer or the connection's error.
            log.warning("the sign-in mail could not be sent: %s", type(error).__name__)
            raise StoreError("the sign-in mail could not be sent; try again later", 503) from None
        return email

    async def sign_in(self, email: str, code: str, client: str, where: Device) -> tuple[str, str]:
        """The token and payment secret of a new sign-in, for a right code; else StoreError."""
        email = email.strip().lower()
        code = code.strip()
        # Every try counts, the right one too: past the allowance, no code is even looked at.
        await self._throttled("try", email, client)
        token, secret = f"pst_{secrets.token_urlsafe(32)}", f"pss_{secrets.token_urlsafe(32)}"
        buyer = None
        if CODE.fullmatch(code):
            buyer = await self._run(
                db.sign_in,
                email,
                digest(f"{email}\n{code}"),
                digest(token),
                digest(secret),
                where.udid,
                where.model,
                self.now(),
            )
        if buyer is None:
            raise StoreError("that code is wrong, expired or used; ask for a new one")
        return token, secret

    # Tokens ------------------------------------------------------------------------------

    async def buyer(self, token: str | None, where: Device | None) -> db.TokenRecord:
        """The sign-in a token names, on this device; refused with ``invalidate`` otherwise.

        ``where`` None: a request that names no device (Zebra's sign-out), which the
        token alone identifies.
        """
        if not token:
            raise StoreError("sign in first: this needs a token", 401)
        found = await self._run(db.find_token, digest(token))
        if found is None or found.revoked:
            raise StoreError(
                "this sign-in is not valid any more; sign in again", 401, invalidate=True
            )
        if where is not None and found.udid != where.udid:
            raise StoreError(
                "this token was issued to another device; sign in again", 401, invalidate=True
            )
        return found

    async def user_info(self, token: str | None, where: Device) -> dict[str, object]:
        buyer = await self.buyer(token, where)
        items = await self._run(db.owned_packages, buyer.buyer_id, where.udid)
        return {"items": items, "user": {"name": buyer.email, "email": buyer.email}}

    async def sign_out(self, token: str | None, where: Device | None) -> dict[str, object]:
        """Revoke the token. Zebra v1 sends the token alone (``ZBPaymentVendor.m``,
        ``signOut``), Sileo with the device: either way whoever holds the token may end it."""
        await self.buyer(token, where)
        assert token is not None
        await self._run(db.revoke_token, digest(token), self.now())
        return {"success": True}

    # Packages ----------------------------------------------------------------------------

    async def _for_sale(self, package: str) -> db.ForSale:
        found = await self._run(db.for_sale, package)
        if found is None or not found.online:
            raise StoreError(f"no package {package!r} in this store", 404)
        return found

    async def package_info(
        self, package: str, token: str | None, where: Device | None
    ) -> dict[str, object]:
        """Price and ownership; ``where`` None for Zebra's signed-out GET (no device, no token)."""
        found = await self._for_sale(package)
        purchased = False
        buyer_id = None
        if token:
            if where is None:
                raise StoreError("udid is missing or malformed")
            buyer = await self.buyer(token, where)
            buyer_id = buyer.buyer_id
            purchased = await self._run(db.owns, buyer_id, where.udid, found)
        if found.price is None:
            # Tagged commercial with no price yet: paid, but not sold until it has one.
            shown, priced = "not priced yet", False
        else:
            # Sileo shows the string as it is on the buy button: the price a purchase now
            # pays (a running sale's, less a code the buyer entered), then the list price.
            offer = await self._quote(found, buyer_id)
            shown, priced = display_price(offer.price, found.currency), Decimal(found.price) != 0
            if offer.price != offer.list_price:
                shown += f" (was {display_price(offer.list_price, found.currency)})"
        if self.test_mode:
            shown += " (test)"
        return {
            "price": shown,
            "purchased": purchased,
            "available": priced and self._platform is not None,
        }

    async def purchase(
        self, package: str, token: str | None, secret: str | None, where: Device
    ) -> dict[str, object]:
        buyer = await self.buyer(token, where)
        # The payment secret is the device owner's consent (passcode or biometrics), and a
        # device without a passcode has none to give: Sileo then leaves it out
        # (PaymentProvider.swift, postRequest) and Zebra v1 sends null (ZBPaymentVendor.m,
        # initiatePurchaseForPackage). Such a purchase goes on with the token alone: no
        # platform here takes money without the buyer's own confirmation (Stripe Checkout
        # is a page the buyer pays on; test mode takes none). A secret that is sent must be
        # this sign-in's; another one means the device's credentials are not a pair.
        if secret and not secrets.compare_digest(digest(secret), buyer.secret_hash):
            raise StoreError("the payment secret does not match this sign-in", 401, invalidate=True)
        found = await self._for_sale(package)
        if await self._run(db.owns, buyer.buyer_id, where.udid, found):
            return {"status": 0}
        if self._platform is None or found.price is None or Decimal(found.price) == 0:
            raise StoreError(f"{package} is not for sale here")
        payment_id = self._platform.new_id()
        offer = await self._quote(found, buyer.buyer_id)
        purchase = db.StorePurchase(
            source_id=found.source_id,
            package_id=found.id,
            buyer_id=buyer.buyer_id,
            email=buyer.email,
            udid=where.udid,
            model=where.model,
            total=offer.price,
            currency=found.currency,
            platform=self._platform.name,
            txn_id=payment_id,
            purchased_at=self.now(),
            list_price=None if offer.price == offer.list_price else offer.list_price,
            discount_code=None if offer.discount is None else offer.discount.code,
            discount_id=None if offer.discount is None else offer.discount.id,
        )
        try:
            await self._run(db.start_payment, payment_id, purchase)
        except db.DiscountSpent:
            assert offer.discount is not None
            await self._run(discounts.forget, buyer.buyer_id, offer.discount.id)
            raise StoreError(
                f"the discount code {offer.discount.code} has just been used up; "
                "buy again to pay the full price",
                409,
            ) from None
        outcome = await self._platform.pay(
            Payment(payment_id, offer.price, found.currency, f"{found.package} ({found.source})")
        )
        if outcome.next == "done":
            assert outcome.txn_id is not None
            await self._run(_complete, payment_id, outcome.txn_id, self.now(), self._terms)
            return {"status": 0}
        if outcome.next == "open":
            return {"status": 1, "url": outcome.url}
        await self._run(db.fail_payment, payment_id)
        return {"status": -1}

    async def _quote(self, found: db.ForSale, buyer_id: int | None) -> Quote:
        assert found.price is not None
        now = self.now()
        sale, discount = await self._run(
            prices.offer, found.id, found.package, found.currency, buyer_id, now
        )
        return quote(found.price, found.currency, sale, discount, now)

    # Codes entered on the sign-in page ---------------------------------------------------

    async def redeem_gift(self, email: str, code: str, where: Device) -> str:
        """Redeem a gift code for the buyer signed in as ``email``; the package now owned.
        StoreError (naming the field) for a code unknown, used, expired, or a package owned."""
        buyer = await self._run(db.buyer_id, email)
        if buyer is None:
            raise StoreError("gift_code: sign in first")
        try:
            done = await self._run(
                gifts.redeem, digest(code_text(code)), buyer, email, (where.udid, where.model),
                self.now(),
            )  # fmt: skip
        except ShopRefused as refused:
            raise StoreError(str(refused), 409 if refused.kind == "conflict" else 400) from None
        return done.package

    async def check_discount(self, code: str) -> str:
        """The discount code as stored (upper case), when it can be used now; else StoreError."""
        wanted = code.strip().upper()
        found = await self._run(discounts.find, wanted, self.now())
        if found is None:
            raise StoreError("discount_code: no such discount code")
        if found.state != "active":
            why = "has been used up" if found.state == "used_up" else "has ended"
            raise StoreError(f"discount_code: this discount code {why}")
        return found.id

    async def enter_discount(self, email: str, discount_id: str) -> None:
        """Keep a checked discount code for the buyer's next purchase of its package."""
        buyer = await self._run(db.buyer_id, email)
        if buyer is None:
            raise StoreError("discount_code: sign in first")
        await self._run(discounts.enter, buyer, discount_id, self.now())

    async def authorize_download(
        self,
        package: str,
        token: str | None,
        version: str | None,
        architecture: str | None,
        where: Device,
        user_agent: str | None = None,
    ) -> dict[str, object]:
        """The URL of the file the device asked for: this version, for its architecture.

        Zebra sends ``version``, ``repo`` and ``architecture``; the file is then never
        another architecture's. Sileo sends ``version`` and ``repo`` alone
        (PaymentProvider.swift, ``downloadURL``): of several files, a device whose
        ``user_agent`` names a kernel older than iOS 15's gets a rootful one, since no
        rootless jailbreak runs there; any other, the one ``PKGCAT_ARCHITECTURES`` prefers.
        A free package's file (one a stale index still showed as paid) is answered
        with its plain address, which needs no grant.
        """
        buyer = await self.buyer(token, where)
        if not version:
            raise StoreError("version is missing")
        found = await self._for_sale(package)
        served = await self._served.current()
        files = [e for e in served.pool.values() if e.package == package and e.version == version]
        if not files:
            raise StoreError(f"no file of {package} {version} is served here", 404)
        if architecture:
            chosen = [e for e in files if e.architecture == architecture]
            if not chosen:
                built = ", ".join(sorted(e.architecture for e in files))
                raise StoreError(
                    f"no file of {package} {version} for {architecture} is served here"
                    f" (it is built for {built})",
                    404,
                )
            files = chosen
        elif _before_rootless(user_agent):
            files = [e for e in files if e.architecture in ROOTFUL] or files
        entry = min(files, key=lambda e: self._preference.rank(e.architecture))
        path = "/repo/" + pool_path(entry.package, entry.version, entry.architecture, entry.sha256)
        if entry.hidden and not entry.paid:
            # A withdrawn version is kept for the buyers who own the package; a free
            # package has none, so its withdrawn versions are served to nobody.
            raise StoreError(f"{package} {version} is withdrawn", 404)
        if not entry.paid:
            return {"url": self._downloads_base + path}
        if not await self._run(db.owns, buyer.buyer_id, where.udid, found):
            raise StoreError(f"{package} is not bought by this account", 403)
        try:
            signed = await self._served.download_url(path)
        except NoPassphrase:
            raise StoreError("downloads of paid packages are not enabled here", 503) from None
        return {"url": self._downloads_base + signed}

    async def stripe_event(self, payload: bytes, signature: str) -> bool:
        """Apply a Stripe webhook's event, once; False when it was applied before.

        StoreError (400) for a body whose signature does not verify, whose timestamp is
        out of the tolerance either way, or whose shape is not Stripe's; 409 for a
        completion whose PaymentIntent another purchase already names: nothing applied.
        """
        if not self._webhook_secrets:
            raise StoreError("Stripe is not this store's payment platform", 404)
        from pkgcat.money.events import effect_of
        from pkgcat.store.stripe_platform import Change, verified_event

        try:
            event = verified_event(payload, signature, self._webhook_secrets, self.now())
        except ValueError as error:
            raise StoreError(str(error)) from None
        if event.change is None:
            return False  # an event the store does not act on
        terms = self._terms
        if isinstance(event.change, Change) and event.change.kind == "complete":
            terms = await self._sale_terms(event.change.payment_id, event.change.txn_id)
        effect = effect_of(event.change, self.now(), terms)
        try:
            return await self._run(db.apply_event, event.id, self.now(), effect)
        except db.TxnTaken as taken:
            # Nothing applied: Stripe retries, and applies it once the operator has settled it.
            raise StoreError(
                f"the payment's reference {taken} is already the txn_id of another purchase "
                "(an imported one?); nothing was applied",
                409,
            ) from None

    async def _sale_terms(self, payment_id: str, txn_id: str) -> db.SaleTerms:
        """The terms a completed Stripe payment is recorded with: its fee, as Stripe's
        balance transaction of the charge says it. When Stripe cannot tell it now, the
        sale is recorded all the same (the buyer has paid) and its fee asked again before
        its release."""
        payment = await self._run(db.open_payment, payment_id)
        if payment is None or self._money is None:
            return self._terms  # applied as nothing: not an open payment of the store's
        fee = await anyio.to_thread.run_sync(self._money.fee, txn_id, payment.currency)
        return replace(self._terms, fee=fee, fee_pending=fee is None)

    async def close(self) -> None:
        await self._limiter.close()


def code_text(code: str) -> str:
    """A gift code as stored: its letters in upper case, spaces and dashes left out."""
    return "".join(code.split()).replace("-", "").upper()


def _complete(engine: Engine, payment_id: str, txn_id: str, now: int, terms: db.SaleTerms) -> bool:
    with engine.begin() as connection:
        return db.complete_payment(connection, payment_id, txn_id, now, terms=terms)


def _before_rootless(user_agent: str | None) -> bool:
    """Whether a User-Agent names a Darwin release older than the first with rootless jailbreaks."""
    found = DARWIN.search(user_agent or "")
    return found is not None and int(found[1]) < FIRST_ROOTLESS_DARWIN


def _downloads_base(settings: Settings) -> str:
    """The origin download URLs are made under: the repository's, else the store's.

    Never plain http unless ``PKGCAT_STORE_ALLOW_HTTP`` says so: an http repository
    address then yields to the store's (https) one.
    """
    address = settings.repository_url
    if address is None or (address.startswith("http://") and not settings.store_allow_http):
        address = settings.store_url
    assert address is not None
    scheme, _, rest = address.partition("://")
    return f"{scheme}://{rest.partition('/')[0]}"
