"""Use cases of selling: the price and availability, a sale for a window, discount codes.

Amounts are checked against their currency's minor units (:mod:`pkgcat.money.amounts`,
ISO 4217): ``1.999`` USD or ``1.5`` JPY is refused naming the field, never rounded.
"""

from __future__ import annotations

import re
import secrets
from decimal import Decimal

from sqlalchemy import Engine

from pkgcat.money import amounts
from pkgcat.shop.errors import ShopRefused
from pkgcat.shop.values import Discount, Price, Sale
from pkgcat.storage.shop import discounts as stored_discounts
from pkgcat.storage.shop import prices as stored

MAX_PRICE = Decimal(100_000)
"""The highest price taken, in the currency's major unit."""
CODE = re.compile(r"[A-Z0-9][A-Z0-9_-]{2,39}")


def check_currency(currency: str, field: str = "currency") -> str:
    code = currency.strip().upper()
    try:
        amounts.exponent(code)
    except amounts.AmountError as error:
        raise ShopRefused(field, str(error)) from None
    return code


def check_amount(field: str, value: str, currency: str) -> str:
    """``value`` as canonical text of the currency's minor units; refused naming ``field``."""
    try:
        units = amounts.to_minor(str(value).strip(), currency)
    except amounts.AmountError as error:
        raise ShopRefused(field, str(error)) from None
    if units < 0 or amounts.from_minor(units, currency) > MAX_PRICE:
        raise ShopRefused(field, f"must be between 0 and {MAX_PRICE}")
    return amounts.text(units, currency)


def set_price(
    engine: Engine,
    source_id: int,
    package: str,
    *,
    price: str | None = None,
    currency: str | None = None,
    online: bool | None = None,
    actor: str,
    now: int,
) -> Price:
    """Set the price (in ``currency``, or the package's own), its currency, or whether it is
    online; what is not given stays."""
    if price is None and currency is None and online is None:
        raise ShopRefused("price", "nothing to set: give price, currency or online")
    if currency is not None:
        currency = check_currency(currency)
    if price is not None:
        current = stored.read_price(engine, source_id, package)[0].currency
        price = check_amount("price", price, currency or current)
    elif currency is not None:
        found = stored.read_price(engine, source_id, package)[0]
        if found.price is not None:
            price = check_amount("price", found.price, currency)
    return stored.set_price(
        engine, source_id, package, price=price, currency=currency, online=online,
        actor=actor, now=now,
    )  # fmt: skip


def set_sale(
    engine: Engine,
    source_id: int,
    package: str,
    *,
    price: str,
    starts_at: int,
    ends_at: int,
    actor: str,
    now: int,
) -> Sale:
    """A sale price for ``[starts_at, ends_at)``: below the list price, above zero."""
    if ends_at <= starts_at:
        raise ShopRefused("ends_at", "must be after starts_at")
    if ends_at <= now:
        raise ShopRefused("ends_at", "is in the past")

    def check(list_price: str, currency: str) -> str:
        sale = check_amount("sale_price", price, currency)
        if Decimal(sale) <= 0 or Decimal(sale) >= Decimal(list_price):
            raise ShopRefused(
                "sale_price", f"must be above 0 and below the price ({list_price} {currency})"
            )
        return sale

    return stored.set_sale(
        engine, source_id, package, price=price, starts_at=starts_at, ends_at=ends_at,
        check=check, actor=actor, now=now,
    )  # fmt: skip


def end_sale(engine: Engine, source_id: int, package: str, *, actor: str, now: int) -> None:
    stored.end_sale(engine, source_id, package, actor=actor, now=now)


def create_discount(
    engine: Engine,
    source_id: int,
    package: str,
    *,
    code: str,
    percent: str | None = None,
    amount: str | None = None,
    max_uses: int,
    ends_at: int,
    actor: str,
    now: int,
) -> Discount:
    """A discount code: ``percent`` off (1 to 99) or ``amount`` off (in the package's
    currency, below its price), at most ``max_uses`` purchases, until ``ends_at``."""
    wanted = code.strip().upper()
    if not CODE.fullmatch(wanted):
        raise ShopRefused(
            "code", "3 to 40 letters, digits, '-' or '_', starting with one of the first two"
        )
    if (percent is None) == (amount is None):
        raise ShopRefused("percent", "give a percent or an amount, not both")
    if not 1 <= max_uses <= 1_000_000:
        raise ShopRefused("max_uses", "must be 1 to 1000000")
    if ends_at <= now:
        raise ShopRefused("ends_at", "is in the past")
    kind = "percent" if percent is not None else "amount"

    def check(list_price: str | None, currency: str) -> str:
        if percent is not None:
            try:
                share = Decimal(percent)
            except ArithmeticError:
                raise ShopRefused("percent", f"{percent!r} is not a number") from None
            if not share.is_finite() or share != share.to_integral_value() or not 1 <= share <= 99:
                raise ShopRefused("percent", "a whole number from 1 to 99 (100: give a gift code)")
            return str(int(share))
        assert amount is not None
        off = check_amount("amount", amount, currency)
        if Decimal(off) <= 0 or (list_price is not None and Decimal(off) >= Decimal(list_price)):
            raise ShopRefused(
                "amount", f"must be above 0 and below the price ({list_price} {currency})"
            )
        return off

    return stored_discounts.create(
        engine, source_id, package, discount_id=f"dsc_{secrets.token_hex(12)}", code=wanted,
        kind=kind, max_uses=max_uses, ends_at=ends_at, check=check, actor=actor,
        now=now,
    )  # fmt: skip


def discounts(engine: Engine, source_id: int, package: str, now: int) -> list[Discount]:
    return stored_discounts.listed(engine, source_id, package, now)


def end_discount(engine: Engine, source_id: int, code: str, *, actor: str, now: int) -> Discount:
    return stored_discounts.end(engine, source_id, code.strip().upper(), actor=actor, now=now)
