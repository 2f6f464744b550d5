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

from pkgcat.client import _models, _money, _webhooks
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
    RequestInProgressError,
    ServerError,
)
from pkgcat.client._models import *  # noqa: F403 - its records: what its __all__ names
from pkgcat.client._money import *  # noqa: F403 - the same for the money operations
from pkgcat.client._webhooks import *  # noqa: F403 - the same for webhook/*

__all__ = [
    "APIConnectionError",
    "APIError",
    "AsyncClient",
    "AuthenticationError",
    "Client",
    "InvalidArgumentError",
    "KeyPlacement",
    "NotFoundError",
    "PermissionDeniedError",
    "PkgcatError",
    "ProtocolError",
    "RateLimitError",
    "RequestInProgressError",
    "ServerError",
]
# The records, as their modules list them: a new record is exported where it is declared.
__all__ += _models.__all__
__all__ += _webhooks.__all__
__all__ += _money.__all__
