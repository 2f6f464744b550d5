"""ISO 4217 currency codes a price or a purchase may be in, from the ``iso4217`` package.

The package ships ISO 4217's list one as its maintenance agency publishes it
(a new release follows each amendment), so a new code, or one withdrawn, needs
an upgrade of the package, not an edit here. A withdrawn code is not in the
list, so it is refused: ``ANG`` (the Netherlands Antillean guilder, replaced by
the Caribbean guilder ``XCG`` in 2025) and ``BGN`` (the lev, replaced by the
euro in 2026) among the latest.

The codes kept are money a storefront can take: those with minor units. ISO
4217 gives none ("N.A.") to precious metals (XAU, XAG, XPD, XPT), bond-market
and drawing-right units (XBA to XBD, XDR, XSU, XUA), and the testing and "no
currency" codes (XTS, XXX). It does give two to one unit of account, which is
therefore named here: :data:`UNITS_OF_ACCOUNT`.

The list is read once, when the first operator file is checked: the package
parses its XML table on import, which the server and the other commands do not
need to pay for.
"""

from __future__ import annotations

from functools import cache

UNITS_OF_ACCOUNT = frozenset({"XAD"})
"""Codes with minor units that no one pays in: the Arab Monetary Fund's Arab Accounting Dinar."""


@cache
def currencies() -> frozenset[str]:
    """The three-letter codes accepted in operator files."""
    from iso4217 import Currency  # here, not at the top: read on first use (see above)

    return frozenset(c.code for c in Currency if c.exponent is not None) - UNITS_OF_ACCOUNT


def is_currency(code: str) -> bool:
    return code in currencies()
