"""The records of the ``webhook/*`` operations, and their readers.

These answers are the server's own JSON (no shape B): each field is read strictly, as the
JSON type it is sent as. A signing secret is shown once, in :class:`WebhookSecret`; it is
left out of that record's ``repr`` so that logging the record does not log the secret.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import TypeVar

from pkgcat.client._shapes import (
    MalformedResponse,
    Zoned,
    answer,
    as_sent,
    mapping,
    read_record,
    record,
)

__all__ = ["WebhookAttempt", "WebhookDeliveries", "WebhookEndpoint", "WebhookSecret"]
"""The records, exported by :mod:`pkgcat.client`."""

T = TypeVar("T")


def _exactly(kind: type[T]) -> Callable[[object, str], T]:
    """A value of this JSON type (a boolean is no integer)."""

    def read(value: object, where: str) -> T:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise MalformedResponse(f"{where}: unexpected {value!r}")
        return value

    return read


def _optional(kind: type[T]) -> Callable[[object, str], T | None]:
    """``null`` (or nothing), or a value of this JSON type."""
    exactly = _exactly(kind)
    return lambda value, where: None if value is None else exactly(value, where)


def _strings(value: object, where: str) -> tuple[str, ...]:
    events = _exactly(list)(value, where)
    if not all(isinstance(e, str) for e in events):
        raise MalformedResponse(f"{where}: expected strings")
    return tuple(events)


def _instant(value: object, where: str, zone: tzinfo) -> datetime:
    if not isinstance(value, str):
        raise MalformedResponse(f"{where}: expected a date-time, got {value!r}")
    try:
        return datetime.fromisoformat(value).astimezone(zone)
    except ValueError:
        raise MalformedResponse(f"{where}: {value!r} is not a date-time") from None


_INSTANT = Zoned(_instant)


@record(slots=True)
class WebhookEndpoint:
    """One webhook endpoint of the key's application (never its secret)."""

    id: str = as_sent(_exactly(str))
    url: str = as_sent(_exactly(str))
    events: tuple[str, ...] = as_sent(_strings)
    enabled: bool = as_sent(_exactly(bool))
    disabled_reason: str | None = as_sent(_optional(str))
    created_at: datetime = as_sent(_INSTANT)


@record(slots=True)
class WebhookSecret:
    """An endpoint just created or its secret just rolled, with the secret shown this once."""

    endpoint: WebhookEndpoint = as_sent(WebhookEndpoint)
    secret: str = as_sent(_exactly(str), repr=False)


@record(slots=True)
class WebhookAttempt:
    """One delivery attempt: when, whether a 2xx came in time, the status, and the answer's
    first bytes (or why there was none)."""

    event_id: str = as_sent(_exactly(str))
    attempted_at: datetime = as_sent(_INSTANT)
    ok: bool = as_sent(_exactly(bool))
    status: int | None = as_sent(_optional(int))
    duration_ms: int = as_sent(_exactly(int))
    response: str = as_sent(_exactly(str))


def _attempts(value: object, where: str, zone: tzinfo) -> tuple[WebhookAttempt, ...]:
    found = _exactly(list)(value, where)
    return tuple(read_record(WebhookAttempt, a, zone, f"{where}[{i}]") for i, a in enumerate(found))


@record(slots=True)
class WebhookDeliveries:
    """A page of an endpoint's delivery log, newest first."""

    attempts: tuple[WebhookAttempt, ...] = as_sent(Zoned(_attempts))
    limit: int = as_sent(_exactly(int))
    has_more: bool = as_sent(_exactly(bool))
    cursor: str | None = as_sent(_optional(str))


def read_endpoints(value: object, zone: tzinfo) -> list[WebhookEndpoint]:
    found = _exactly(list)(mapping(value, "response").get("endpoints"), "response.endpoints")
    return [
        read_record(WebhookEndpoint, e, zone, f"response.endpoints[{i}]")
        for i, e in enumerate(found)
    ]


def read_deleted(value: object, zone: tzinfo) -> str:  # noqa: ARG001 - a reader's signature
    """The id of the endpoint deleted."""
    return _exactly(str)(mapping(value, "response").get("id"), "response.id")


read_endpoint = answer(WebhookEndpoint)
read_secret = answer(WebhookSecret)
read_attempt = answer(WebhookAttempt)
read_deliveries = answer(WebhookDeliveries)
