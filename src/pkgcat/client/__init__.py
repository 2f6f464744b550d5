"""A typed client of the Package Catalogue API, for any server of the family.

It reads both response shapes (spec section 9) without being told which one a
server speaks, and returns immutable, typed records::

    from pkgcat.client import Client

    with Client("https://catalogue.example", secret_key) as client:
        for day in client.usage(days=7):
            print(day.day, day.usage)

See ``docs/client.md`` for the whole guide, and :mod:`pkgcat.client._errors`
for the exception tree.
"""

from pkgcat.client._client import AsyncClient, Client, KeyPlacement
from pkgcat.client._errors import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    PkgcatError,
    ProtocolError,
    RateLimitError,
    ServerError,
)
from pkgcat.client._models import (
    Buyer,
    BuyersCursorPage,
    BuyersPage,
    Downloads,
    DownloadsDay,
    Operator,
    Ownership,
    Package,
    PackagesPage,
    Purchase,
    Relation,
    Relations,
    Sale,
    SalesPage,
    SalesTotal,
    Source,
    SourcePackage,
    UsageDay,
)
from pkgcat.client._webhooks import (
    WebhookAttempt,
    WebhookDeliveries,
    WebhookEndpoint,
    WebhookSecret,
)

__all__ = [
    "APIConnectionError",
    "APIError",
    "AsyncClient",
    "AuthenticationError",
    "Buyer",
    "BuyersCursorPage",
    "BuyersPage",
    "Client",
    "Downloads",
    "DownloadsDay",
    "InvalidArgumentError",
    "KeyPlacement",
    "NotFoundError",
    "Operator",
    "Ownership",
    "Package",
    "PackagesPage",
    "PermissionDeniedError",
    "PkgcatError",
    "ProtocolError",
    "Purchase",
    "RateLimitError",
    "Relation",
    "Relations",
    "Sale",
    "SalesPage",
    "SalesTotal",
    "ServerError",
    "Source",
    "SourcePackage",
    "UsageDay",
    "WebhookAttempt",
    "WebhookDeliveries",
    "WebhookEndpoint",
    "WebhookSecret",
]
