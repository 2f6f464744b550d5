"""Where a request carries its secret key (spec 5, and decision 6 of docs/api.md).

The key comes from the ``secret_key`` query parameter, as the spec says, or
from ``Authorization: Bearer <key>``, which keeps it out of access logs.
Both may be sent only when they hold the same key. A deployment whose clients all
send the header can refuse keys in the query (``PKGCAT_QUERY_KEYS=false``): a
proxy in front writes the whole request line into its error log.
"""

from __future__ import annotations

from pkgcat.errors import QueryKeyRefused, Unauthenticated


def presented_key(
    query_key: str | None, authorization: bytes | None, *, query_keys: bool = True
) -> str | None:
    """The key the request presents, or ``None`` when it presents none.

    ``query_keys`` false: a key in the query is refused, whatever else the request holds."""
    query_key = query_key or None  # an empty secret_key= presents nothing
    if query_key is not None and not query_keys:
        raise QueryKeyRefused(
            "secret_key: this server takes no key in the query string, where logs keep it; "
            "send it in the header Authorization: Bearer <secret key>"
        )
    header_key: str | None = None
    if authorization is not None:
        scheme, _, token = authorization.decode("latin-1").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthenticated("Authorization: use 'Bearer <secret key>'")
        header_key = token.strip()
    if query_key is not None and header_key is not None and query_key != header_key:
        raise Unauthenticated(
            "secret_key: the query parameter and the Authorization header carry different keys"
        )
    return header_key if header_key is not None else query_key
