"""The shop's one error: a change refused, naming the field at fault.

``kind`` says which answer the API gives (the wiring maps it once): ``invalid`` is bad input
(code 2), ``missing`` a package, version or code that is not there (code 8), ``conflict`` a
state that refuses the change now (a code redeemed already, a code name taken: code 2, the
message saying which).
"""

from __future__ import annotations

from typing import Literal

Kind = Literal["invalid", "missing", "conflict"]


class ShopRefused(ValueError):
    """A shop change refused; nothing of it was written."""

    def __init__(self, field: str, message: str, kind: Kind = "invalid") -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.kind: Kind = kind
