"""The records of the ``webhook/*`` operations, and their readers.

A signing secret is shown once, in :class:`WebhookSecret`; it is left out of
that record's ``repr`` so that logging the record does not log the secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo

from pkgcat.client._shapes import MalformedResponse

__all__ = ["WebhookAttempt", "WebhookDeliveries", "WebhookEndpoint", "WebhookSecret"]
"""The records, exported by :mod:`pkgcat.client`."""

WEBHOOK = "/1.0/webhook/{verb}.json"


@dataclass(frozen=True, slots=True)
class WebhookEndpoint:
    """One webhook endpoint of the key's application (never its secret)."""

    id: str
    url: str
    events: tuple[str, ...]
    enabled: bool
    disabled_reason: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class WebhookSecret:
    """An endpoint just created or its secret just rolled, with the secret shown this once."""

    endpoint: WebhookEndpoint
    secret: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class WebhookAttempt:
    """One delivery attempt: when, whether a 2xx came in time, the status, and the answer's
    first bytes (or why there was none)."""

    event_id: str
    attempted_at: datetime
    ok: bool
    status: int | None
    duration_ms: int
    response: str


@dataclass(frozen=True, slots=True)
class WebhookDeliveries:
    """A page of an endpoint's delivery log, newest first."""

    attempts: tuple[WebhookAttempt, ...]
    limit: int
    has_more: bool
    cursor: str | None


def _object(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise MalformedResponse(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _get(obj: Mapping[str, object], name: str, kind: type | tuple[type, ...], where: str) -> object:
    value = obj.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise MalformedResponse(f"{where}.{name}: unexpected {value!r}")
    return value


def _moment(value: object, where: str, zone: tzinfo) -> datetime:
    if not isinstance(value, str):
        raise MalformedResponse(f"{where}: expected a date-time, got {value!r}")
    try:
        return datetime.fromisoformat(value).astimezone(zone)
    except ValueError:
        raise MalformedResponse(f"{where}: {value!r} is not a date-time") from None


def read_endpoint(value: object, zone: tzinfo, where: str = "response") -> WebhookEndpoint:
    obj = _object(value, where)
    events = _get(obj, "events", list, where)
    assert isinstance(events, list)
    if not all(isinstance(e, str) for e in events):
        raise MalformedResponse(f"{where}.events: expected strings")
    reason = obj.get("disabled_reason")
    if reason is not None and not isinstance(reason, str):
        raise MalformedResponse(f"{where}.disabled_reason: unexpected {reason!r}")
    return WebhookEndpoint(
        id=str(_get(obj, "id", str, where)),
        url=str(_get(obj, "url", str, where)),
        events=tuple(events),
        enabled=bool(_get(obj, "enabled", bool, where)),
        disabled_reason=reason,
        created_at=_moment(obj.get("created_at"), f"{where}.created_at", zone),
    )


def read_endpoints(value: object, zone: tzinfo) -> list[WebhookEndpoint]:
    found = _get(_object(value, "response"), "endpoints", list, "response")
    assert isinstance(found, list)
    return [read_endpoint(e, zone, f"response.endpoints[{i}]") for i, e in enumerate(found)]


def read_secret(value: object, zone: tzinfo) -> WebhookSecret:
    obj = _object(value, "response")
    endpoint = read_endpoint(obj.get("endpoint"), zone, "response.endpoint")
    return WebhookSecret(endpoint, str(_get(obj, "secret", str, "response")))


def read_deleted(value: object, zone: tzinfo) -> str:  # noqa: ARG001 - a reader's signature
    """The id of the endpoint deleted."""
    return str(_get(_object(value, "response"), "id", str, "response"))


def read_attempt(value: object, zone: tzinfo, where: str = "response") -> WebhookAttempt:
    obj = _object(value, where)
    status = obj.get("status")
    if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
        raise MalformedResponse(f"{where}.status: unexpected {status!r}")
    duration = _get(obj, "duration_ms", int, where)
    assert isinstance(duration, int)
    return WebhookAttempt(
        event_id=str(_get(obj, "event_id", str, where)),
        attempted_at=_moment(obj.get("attempted_at"), f"{where}.attempted_at", zone),
        ok=bool(_get(obj, "ok", bool, where)),
        status=status,
        duration_ms=duration,
        response=str(_get(obj, "response", str, where)),
    )


def read_deliveries(value: object, zone: tzinfo) -> WebhookDeliveries:
    obj = _object(value, "response")
    attempts = _get(obj, "attempts", list, "response")
    assert isinstance(attempts, list)
    limit = _get(obj, "limit", int, "response")
    assert isinstance(limit, int)
    cursor = obj.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise MalformedResponse(f"response.cursor: unexpected {cursor!r}")
    return WebhookDeliveries(
        attempts=tuple(
            read_attempt(a, zone, f"response.attempts[{i}]") for i, a in enumerate(attempts)
        ),
        limit=limit,
        has_more=bool(_get(obj, "has_more", bool, "response")),
        cursor=cursor,
    )
