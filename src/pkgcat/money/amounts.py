"""Amounts in a currency's minor units: the one conversion between decimal text and integers.

The ledger keeps integers of the currency's smallest unit (cents of USD, yen, fils of KWD),
which add up exactly in SQL; what is shown is a :class:`~decimal.Decimal` with exactly the
currency's number of decimals (ISO 4217's minor unit exponent: JPY 0, USD 2, KWD 3). The
exponent comes from the ``iso4217`` package, imported on first use (it parses its table
then, about 50 ms), never by a server that sells nothing.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import cache


class AmountError(ValueError):
    """An amount that is not a number of the currency's minor units."""


@cache
def exponent(currency: str) -> int:
    """The currency's minor unit exponent (ISO 4217); AmountError for an unknown code."""
    from iso4217 import Currency

    try:
        return int(Currency(currency.upper()).exponent or 0)
    except (KeyError, ValueError):
        raise AmountError(f"{currency!r} is not an ISO 4217 currency code") from None


def to_minor(amount: Decimal | str, currency: str) -> int:
    """``1.99`` USD as 199: exact, or AmountError when the amount has finer decimals than the
    currency (``1.999`` USD, ``1.5`` JPY) or is not a finite number."""
    try:
        value = Decimal(amount)
    except InvalidOperation:
        raise AmountError(f"{amount!r} is not an amount") from None
    if not value.is_finite():
        raise AmountError(f"{amount!r} is not an amount")
    scaled = value.scaleb(exponent(currency))
    if scaled != scaled.to_integral_value():
        raise AmountError(
            f"{amount} has more decimals than {currency.upper()} has ({exponent(currency)})"
        )
    return int(scaled)


def from_minor(units: int, currency: str) -> Decimal:
    """199 USD cents as ``Decimal('1.99')``; 500 JPY as ``Decimal('500')``."""
    places = exponent(currency)
    return Decimal(units).scaleb(-places).quantize(Decimal(1).scaleb(-places))


def text(units: int, currency: str) -> str:
    """The amount as decimal text (``1.99``), as purchases keep totals and commissions."""
    return format(from_minor(units, currency), "f")


def share(units: int, numerator: int, denominator: int) -> int:
    """``units * numerator / denominator`` rounded half up to a whole minor unit (exact)."""
    if denominator == 0:
        return 0
    return int((Decimal(units) * numerator / denominator).to_integral_value(ROUND_HALF_UP))


def commission(gross: int, percent: Decimal) -> int:
    """The commission on ``gross`` minor units at ``percent``, rounded half up to a minor unit:
    the one rounding of a sale, so gross - commission - fee is the seller's net exactly."""
    return int((Decimal(gross) * percent / 100).to_integral_value(ROUND_HALF_UP))
