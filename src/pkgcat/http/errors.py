"""Every error leaves the server here, as the ``{"code", "response"}`` envelope."""

from __future__ import annotations

import orjson

from pkgcat.errors import ApiError, BodyTimedOut, RateLimited, RequestInProgress, Unavailable

Headers = list[tuple[bytes, bytes]]


def envelope(response: object) -> bytes:
    """A success body: ``{"code": 0, "response": ...}``."""
    return orjson.dumps({"code": 0, "response": response})


def envelope_of_items(*parts: bytes) -> bytes:
    """A success body whose response is the JSON array of the items in ``parts`` (each
    a run of comma-separated items without brackets; empty runs are skipped)."""
    return b'{"code":0,"response":[' + b",".join(part for part in parts if part) + b"]}"


def error_response(error: ApiError) -> tuple[int, bytes, Headers]:
    """Status, body and extra headers for an API error."""
    body = orjson.dumps({"code": error.code, "response": error.message})
    headers: Headers = []
    if isinstance(error, RateLimited):
        headers.append((b"retry-after", str(error.decision.reset_after).encode()))
    elif isinstance(error, (Unavailable, RequestInProgress)):
        headers.append((b"retry-after", str(error.retry_after).encode()))
    elif isinstance(error, BodyTimedOut):  # the rest of the body is not read: no next request
        headers.append((b"connection", b"close"))
    return error.status, body, headers
