"""What a buyer pays: the list price, a running sale's price, then a discount code.

Exact, in the currency's minor units (:mod:`pkgcat.money.amounts`): a percentage is rounded
half up to a minor unit, and no discount takes a price below one minor unit (0.01 USD, 1 JPY):
a copy for nothing is a gift (gift codes), not a discount.
"""

from __future__ import annotations

from decimal import Decimal

from pkgcat.money import amounts
from pkgcat.shop.values import Discount, Quote, Sale


def running(sale: Sale | None, now: int) -> Sale | None:
    return sale if sale is not None and sale.starts_at <= now < sale.ends_at else None


def discounted(units: int, discount: Discount, currency: str) -> int:
    """``units`` less the discount, never below one minor unit."""
    if discount.kind == "percent":
        off = amounts.commission(units, Decimal(discount.value))
    else:
        off = amounts.to_minor(discount.value, currency)
    return max(units - off, 1)


def quote(
    list_price: str, currency: str, sale: Sale | None, discount: Discount | None, now: int
) -> Quote:
    """The price of one purchase now; a sale above the list price is no sale."""
    units = amounts.to_minor(list_price, currency)
    on = running(sale, now)
    if on is not None:
        sale_units = amounts.to_minor(on.price, currency)
        if sale_units < units:
            units = sale_units
        else:
            on = None
    if discount is not None:
        units = discounted(units, discount, currency)
    return Quote(list_price, amounts.text(units, currency), currency, on, discount)
