"""Every failure the client reports, and the one function that maps a response to it.

The tree::

    PkgcatError                      anything this client raises on purpose
    ├── APIConnectionError           no answer: refused, reset, timed out (after retries)
    └── APIError                     an answer that is not a success
        ├── AuthenticationError      code 4: no key sent (code 5 on older servers);
        │                            code 5: an unknown, revoked or malformed key
        ├── InvalidArgumentError     code 2: a parameter is missing or invalid (``parameter``)
        ├── NotFoundError            code 8: no such package (or offline and not yours)
        ├── PermissionDeniedError    code 12: buyers of another source's package;
        │                            code 9: a key without the scope of a write
        ├── RateLimitError           code 13 or HTTP 429 (``retry_after``)
        ├── RequestInProgressError   code 16 (HTTP 409): the write's Idempotency-Key is held
        │                            by the same request, not answered yet (``retry_after``);
        │                            code 16 as HTTP 503 (408 at YouRepo): the request timed
        │                            out, not counted (code 15 on older servers)
        ├── ServerError              code 15 or any HTTP 5xx
        └── ProtocolError            a body that is not the ``{"code", "response"}`` envelope,
                                     or a success whose ``response`` cannot be read

Other codes of the API family (1 unknown endpoint, 6 unknown version, 7 method
not allowed, or a code this client does not know) are plain :class:`APIError`.
Every :class:`APIError` carries the envelope's ``code`` (``None`` when there was
no envelope), the HTTP ``status``, the ``message`` and the ``X-Request-Id``.

:func:`error_from_response` is the only place that turns the wire into one of these.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


class PkgcatError(Exception):
    """Base of every error the client raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class APIConnectionError(PkgcatError):
    """The server could not be reached or did not answer in time (after the retries)."""


class APIError(PkgcatError):
    """The server answered, and the answer is not a success."""

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        status: int | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.status = status
        self.request_id = request_id

    def __str__(self) -> str:
        details = [f"code {self.code}" if self.code is not None else None]
        details.append(f"HTTP {self.status}" if self.status is not None else None)
        details.append(f"request id {self.request_id}" if self.request_id else None)
        given = ", ".join(d for d in details if d)
        return f"{self.message} ({given})" if given else self.message


class AuthenticationError(APIError):
    """Code 4: no key was sent (servers before it answered code 5); code 5: the key is
    unknown, revoked or malformed."""


class InvalidArgumentError(APIError):
    """Code 2: a parameter is missing or invalid; ``parameter`` names it when the message does."""

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        status: int | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message, code=code, status=status, request_id=request_id)
        self.parameter = _parameter_named(message)


class NotFoundError(APIError):
    """Code 8: no such package, or an offline package of another source."""


class PermissionDeniedError(APIError):
    """Code 12: the buyers of a package that is not the caller's; code 9: a key without the
    scope a write needs (a read-only key uploading)."""


class _Later(APIError):
    """An answer that says when to ask again: ``retry_after``, in seconds when known."""

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        status: int | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, code=code, status=status, request_id=request_id)
        self.retry_after = retry_after


class RateLimitError(_Later):
    """Code 13 (or HTTP 429): too many requests; ``retry_after`` is in seconds when known."""


class RequestInProgressError(_Later):
    """Code 16 (HTTP 409): a write whose ``Idempotency-Key`` the same request holds, still in
    progress on the server; asked again after ``retry_after`` seconds, it gives that answer.
    Code 16 with another status (503 here, 408 at YouRepo): the request timed out and was not
    counted; it is retried as well."""


class ServerError(APIError):
    """Code 15 or any HTTP 5xx: the server failed; worth retrying."""


class ProtocolError(APIError):
    """The answer is not the API's envelope, or its ``response`` cannot be read."""


_BY_CODE: dict[int, type[APIError]] = {
    2: InvalidArgumentError,
    4: AuthenticationError,
    5: AuthenticationError,
    8: NotFoundError,
    9: PermissionDeniedError,
    12: PermissionDeniedError,
    13: RateLimitError,
    15: ServerError,
    16: RequestInProgressError,
}

# Our server writes "<parameter>: <problem>" (docs/api.md, decision 8); other servers may not.
_PARAMETER = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]*): ")


def _parameter_named(message: str) -> str | None:
    match = _PARAMETER.match(message)
    return match.group(1) if match else None


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds to wait from ``Retry-After`` (delay-seconds or an HTTP-date, RFC 9110 10.2.3).

    Falls back to ``RateLimit-Reset`` (seconds until the window resets), which our
    server sends beside it; ``None`` when neither is readable.
    """
    raw = headers.get("retry-after")
    if raw is not None:
        text = raw.strip()
        if text.isdigit():
            return float(text)
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            when = None
        if when is not None:
            if when.tzinfo is None:  # RFC 9110 dates are GMT
                when = when.replace(tzinfo=UTC)
            return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
    reset = headers.get("ratelimit-reset", "").strip()
    return float(reset) if reset.isdigit() else None


def _by_status(status: int) -> type[APIError] | None:
    if status == 429:
        return RateLimitError
    return ServerError if status >= 500 else None


def error_from_response(
    status: int,
    envelope: tuple[int, object] | None,
    headers: Mapping[str, str],
    *,
    reason: str = "",
) -> APIError:
    """The exception for an answer that is not a readable success.

    ``envelope`` is the body's ``(code, response)`` when the body is the API's
    envelope, else ``None``; ``reason`` says what is wrong with the answer. A
    non-zero code wins over the HTTP status, because older servers of the family
    may answer an error with HTTP 200. Without one, 429 and 5xx (a proxy or a
    gateway speaking, say) are read by their status, and anything else is a
    protocol error.
    """
    request_id = headers.get("x-request-id") or None
    kind: type[APIError]
    if envelope is not None and envelope[0] != 0:
        code: int | None = envelope[0]
        response = envelope[1]
        message = response if isinstance(response, str) and response else f"error code {code}"
        kind = _BY_CODE.get(envelope[0]) or _by_status(status) or APIError
    else:
        code = None if envelope is None else 0
        message = f"HTTP {status}: {reason or 'a success envelope on a failed answer'}"
        kind = _by_status(status) or ProtocolError
    if issubclass(kind, _Later):
        return kind(
            message,
            code=code,
            status=status,
            request_id=request_id,
            retry_after=retry_after_seconds(headers),
        )
    return kind(message, code=code, status=status, request_id=request_id)
