"""Domain errors and the API's error-code table, kept here once.

Codes follow the API's lineage (the Disqus 3.0 numbering that the YouRepo
developer API copied), so existing clients of that family read them right.
:mod:`pkgcat.http.errors` turns any of these into the ``{"code", "response"}``
envelope; the OpenAPI document and ``docs/api.md`` are checked against
:data:`ERROR_TABLE` by the tests.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pkgcat.domain import RateDecision


class ApiError(Exception):
    """An error the API reports in its envelope: a code, an HTTP status and a message."""

    code: ClassVar[int]
    status: ClassVar[int]
    when: ClassVar[str]
    """When the API answers with it: the OpenAPI document's description of the error."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnknownEndpoint(ApiError):
    code, status, when = 1, 404, "unknown endpoint"


class InvalidArgument(ApiError):
    code, status, when = 2, 400, "missing or invalid argument"

    def __init__(self, parameter: str, problem: str) -> None:
        super().__init__(f"{parameter}: {problem}")
        self.parameter = parameter


class BodyTimedOut(InvalidArgument):
    """Code 2 as HTTP 408: the body did not arrive in time (not a code of its own, as 503 is
    code 15's: a client that knows code 2 knows this one)."""

    status, when = 408, "the request's body did not arrive within PKGCAT_BODY_READ_TIMEOUT"

    def __init__(self, seconds: float) -> None:
        super().__init__("body", f"not received within {seconds:g} s; send it faster")


class Unauthenticated(ApiError):
    code, status, when = 5, 401, "missing, unknown or revoked secret key, or two different keys"


class KeyMissing(Unauthenticated):
    """Code 4 (HTTP 401) for a request that sends no key at all: YouRepo's table, after
    Disqus 3.0's, answers it "You must be authenticated to perform this action", apart from
    code 5 for a key sent that is unknown, revoked or malformed. A subclass of code 5's
    class, so that whatever catches a refused key catches this one too."""

    code, status, when = 4, 401, "no key sent (neither a query parameter nor a Bearer header)"


class QueryKeyRefused(Unauthenticated):
    """Code 5 for a key in the query string where the deployment takes it only in the header.

    Not a guess (the key is not looked at), so not counted against the address."""


class UnknownVersion(ApiError):
    code, status, when = 6, 404, "unknown API version"


class MethodNotAllowed(ApiError):
    code, status, when = (
        7,
        405,
        "method the operation does not take (GET for reads, POST for writes)",
    )


class ScopeMissing(ApiError):
    """A valid key without the scope a write needs (Disqus code 9: "You cannot access this
    resource using your ... API key")."""

    code, status, when = (
        9,
        403,
        "the key lacks the scope the operation needs (a read-only key writing)",
    )


class KeyKindRefused(ScopeMissing):
    """Code 9 for a live key of a kind the operation does not take: a public key anywhere but
    the licence checks (Disqus and YouRepo: "you cannot access this resource using your
    public API key"). Answered before the request is counted, as a refused key is."""


class PackageNotFound(ApiError):
    code, status, when = 8, 404, "package not found (or offline and not the caller's)"


class WebhookNotFound(ApiError):
    """Code 8 (Disqus: "a requested object was not found") for a webhook endpoint or event
    the caller's application does not have: another application's is not told apart."""

    code, status, when = 8, 404, "webhook endpoint or event not found in the caller's application"


class PermissionDenied(ApiError):
    code, status, when = 12, 403, "buyers of a package that is not the caller's"


class OutsideKeyPackage(PermissionDenied):
    """Code 12 for a key made for one package (``pkgcat key create --package``) asked about
    another: a DRM API's package token answers for its package only."""


class RateLimited(ApiError):
    code, status, when = 13, 429, "rate limit exceeded (the request was not counted)"
    application_id: int | None = None
    """Whose limit is spent, for the access line (none for an address refused before its key)."""

    def __init__(self, decision: RateDecision, application_id: int | None = None) -> None:
        super().__init__(
            f"rate limit exceeded: {decision.limit} requests per window; "
            f"retry in {decision.reset_after} s"
        )
        self.decision = decision
        self.application_id = application_id


class PublicLimitSpent(RateLimited):
    """Code 13 for a public key past its allowance, or one of its devices past its own
    (``PKGCAT_PUBLIC_KEY_LIMIT``, ``PKGCAT_PUBLIC_DEVICE_LIMIT``)."""

    def __init__(
        self, decision: RateDecision, application_id: int, spent: Literal["key", "device"]
    ) -> None:
        whose = "this public key" if spent == "key" else "this device with this key"
        ApiError.__init__(
            self,
            f"rate limit exceeded for {whose}: {decision.limit} checks per window; "
            f"retry in {decision.reset_after} s",
        )
        self.decision = decision
        self.application_id = application_id
        self.spent = spent


class TooManyFailures(RateLimited):
    """Code 13 for a client address past its allowance of failed authentications."""

    def __init__(self, allowance: int, retry_after: int, window: int) -> None:
        ApiError.__init__(
            self,
            f"too many failed authentications from this address; retry in {retry_after} s",
        )
        self.decision = RateDecision(
            allowed=False, limit=allowance, remaining=0, reset_after=retry_after, window=window
        )


class RequestInProgress(ApiError):
    """A write whose ``Idempotency-Key`` another request with the same body holds, its work
    not answered yet: retry after ``Retry-After`` to get that answer (Stripe answers 409 to
    such a concurrent request, https://docs.stripe.com/api/idempotent_requests).

    Code 16 is the API family's "your request timed out" (Disqus, HTTP 408): the answer is
    not ready, and the same request sent again gets it."""

    code, status, when = (
        16,
        409,
        "a request with the same Idempotency-Key and body is still in progress; "
        "retry after Retry-After seconds",
    )
    retry_after = 1


class DeadlineExceeded(RequestInProgress):
    """Code 16, "your request timed out" in the API family's table, for a read still under
    way at the request deadline (``PKGCAT_REQUEST_DEADLINE``): cancelled, never counted, and
    answered 503 with ``Retry-After`` (not YouRepo's 408, which HTTP reserves for a request
    the client did not finish sending: docs/api.md, "Errors")."""

    status, when = 503, "no answer within the request deadline; not counted, retry"


class KeptRefusal(ApiError):
    """A write's refusal kept under its ``Idempotency-Key``, answered again to a retry of the
    same request: the code, HTTP status and message of its first answer."""

    code, status, when = 2, 400, "a refusal kept for the retries of its request"

    def __init__(self, code: int, status: int, message: str) -> None:
        super().__init__(message)
        self.code = code  # type: ignore[misc]  # this answer's, as first given
        self.status = status  # type: ignore[misc]


class InternalError(ApiError):
    code, status, when = 15, 500, "internal error; the body carries a request id"


class Unavailable(InternalError):
    """Code 15 as HTTP 503: the database is locked or cannot be reached, for now.

    Not a code of its own (the table lists each code once): a client that knows
    code 15 knows this one, and ``Retry-After`` says when to try again.
    """

    status, when = 503, "the database is locked or unreachable; retry after Retry-After seconds"
    retry_after = 1


class NotReady(Exception):
    """A backend the server needs cannot be used; the message is ``/readyz``'s reason.

    ``found`` is what could be read all the same (the catalogue generations when
    only Redis failed), reported beside the reason.
    """

    def __init__(self, reason: str, found: dict[str, object] | None = None) -> None:
        super().__init__(reason)
        self.found = found or {}


ERROR_TABLE: tuple[type[ApiError], ...] = (
    UnknownEndpoint,
    InvalidArgument,
    KeyMissing,
    Unauthenticated,
    UnknownVersion,
    MethodNotAllowed,
    PackageNotFound,
    ScopeMissing,
    PermissionDenied,
    RateLimited,
    InternalError,
    RequestInProgress,
)
"""Every error the API can answer with, in code order."""
