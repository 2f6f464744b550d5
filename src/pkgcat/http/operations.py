"""The API's operations, declared once: the table that routing, validation, headers and
the OpenAPI document read (and that tests hold the client, the CLI and docs/api.md to).

Each :class:`Operation` states its path, tag, parameters (type, bounds, default,
doc), the response model per shape, the errors it can answer with, whether it
is counted and whether it carries an ``ETag``. An operation is *served* once
:mod:`pkgcat.http.routes` maps a handler to its name (one line there); until
then it is declared here and left out of the served document and routes.

Parameters and response variants that belong to a capability still being
built carry its name in ``feature``; while that name is in :data:`PENDING`
they are declared but neither validated nor documented as served.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any, Literal, TypeVar

from pkgcat import models as m
from pkgcat.domain import SHAPES, KeyScope, Shape
from pkgcat.errors import (
    ApiError,
    DeadlineExceeded,
    InternalError,
    InvalidArgument,
    KeyMissing,
    MethodNotAllowed,
    PackageNotFound,
    PermissionDenied,
    RateLimited,
    RequestInProgress,
    ScopeMissing,
    Unauthenticated,
    WebhookNotFound,
)
from pkgcat.events import NAMES as EVENT_TYPES
from pkgcat.services import BLANK, DAYS_DEFAULT, DAYS_MAX, LIMIT_DEFAULT, LIMIT_MAX

VERSION = "1.0"
DRM_PATH = "/api/drm/check"
"""The Packix/Havoc DRM check's path: Packix's own, outside ``/1.0/`` (pkgcat.http.licences)."""
Query = dict[str, str]
Given = Mapping[str, object]
"""A request's parameters as the table reads them: a query's (text), or a write's fields (a
JSON object's values, or a form's text, a list's items repeated or comma-separated). ``None``
(JSON's null) is a parameter not given."""
Tag = Literal["application", "package", "source", "webhook"]
Kind = Literal["integer", "string", "flag", "day", "choice", "cursor", "list"]
Method = Literal["GET", "POST"]

_MAX_DIGITS = 12
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
INTEGER_MAX = 10**_MAX_DIGITS - 1
"""The largest integer a parameter may hold (twelve digits): the OpenAPI document's ``maximum``."""

PENDING: set[str] = set()
"""Capabilities declared in the table but not served yet: remove a name once it is."""


@dataclass(frozen=True, slots=True)
class Parameter:
    """One query parameter: what it holds, its bounds and default, and its documentation."""

    name: str
    kind: Kind
    doc: str
    required: bool = False
    default: int | str | None = None
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    example: str | None = None
    feature: str | None = None
    any_case: bool = False
    """A choice given in any case (``Refunded`` is ``refunded``)."""
    wanted: str = ""
    """What a missing one asks for ("missing; give <this>"): by default its choices, or
    "a <name> identifier"."""

    @property
    def served(self) -> bool:
        return self.feature not in PENDING

    def missing(self) -> InvalidArgument:
        """The refusal of a required parameter not given (or given blank)."""
        wanted = self.wanted or (self.alternatives if self.choices else f"a {self.name} identifier")
        return InvalidArgument(self.name, f"missing; give {wanted}")

    def integer(self, query: Given) -> int:
        """The integer given (ASCII white space and a sign allowed; a JSON number), or the default.

        Unbounded: :meth:`bounded` and :meth:`page_size` apply ``minimum`` and ``maximum``."""
        raw = query.get(self.name)
        if raw is None:
            assert isinstance(self.default, int), self.name
            return self.default
        if type(raw) is str and len(raw) <= _MAX_DIGITS and raw.isascii() and raw.isdigit():
            return int(raw)  # plain digits, as clients send them: nothing to strip or check
        if isinstance(raw, int) and not isinstance(raw, bool):
            raw = str(raw)
        if not isinstance(raw, str):
            raise InvalidArgument(
                self.name, f"must be an integer of at most {_MAX_DIGITS} digits, got {raw!r}"
            )
        text = raw.strip(BLANK)
        digits = text[1:] if text[:1] in "+-" else text
        # Leading zeros are a spelling: 007 is 7, however many of them there are. They are
        # dropped before converting, which Python refuses past 4,300 digits.
        significant = digits.lstrip("0")
        if not digits.isdigit() or not digits.isascii() or len(significant) > _MAX_DIGITS:
            raise InvalidArgument(
                self.name, f"must be an integer of at most {_MAX_DIGITS} digits, got {raw!r}"
            )
        value = int(significant or "0")
        return -value if text[:1] == "-" else value

    def within(self, value: int) -> int:
        """``value``, refused outside ``minimum`` to ``maximum``.

        A range with both ends (a maximum below :data:`INTEGER_MAX`) is worded as one."""
        low, high = self.minimum, self.maximum
        if high is not None and high >= INTEGER_MAX:
            high = None  # twelve digits: what :meth:`integer` refuses already
        if low is not None and high is not None:
            if not low <= value <= high:
                raise InvalidArgument(self.name, f"must be between {low} and {high}, got {value}")
        elif low is not None and value < low:
            raise InvalidArgument(self.name, f"must be at least {low}, got {value}")
        elif high is not None and value > high:
            raise InvalidArgument(self.name, f"must be at most {high}, got {value}")
        return value

    def bounded(self, query: Given) -> int:
        """:meth:`integer`, then :meth:`within` its bounds."""
        return self.within(self.integer(query))

    def page_size(self, query: Given) -> int:
        """A page size: :meth:`integer`, then :meth:`size`."""
        return self.size(self.integer(query))

    def size(self, value: int) -> int:
        """A page size as applied: :meth:`within` its bounds, then clamped to :data:`LIMIT_MAX`."""
        return min(self.within(value), LIMIT_MAX)

    def flag(self, query: Given) -> bool | None:
        """``0`` or ``1`` (an integer, spelled as any other) as a boolean, or a boolean itself (a
        write's field); ``None`` when absent."""
        raw = query.get(self.name)
        if raw is None or isinstance(raw, bool):
            return raw
        value = self.integer(query)
        if value not in (0, 1):
            raise InvalidArgument(self.name, f"must be 0 or 1, got {raw!r}")
        return value == 1

    def day(self, query: Given) -> date | None:
        """A ``YYYY-MM-DD`` day; ``None`` when absent."""
        raw = query.get(self.name)
        if raw is None:
            return None
        try:
            if isinstance(raw, str) and _ISO_DAY.fullmatch(raw):
                return date.fromisoformat(raw)
        except ValueError:
            pass
        raise InvalidArgument(self.name, f"must be a date as YYYY-MM-DD, got {raw!r}")

    def choice(self, query: Given) -> str | None:
        """One of ``choices``, as listed (in any case when ``any_case``); ``None`` when absent
        (code 2 when required)."""
        raw = query.get(self.name)
        if raw is None:
            if self.required:
                raise self.missing()
            return None
        given = raw.lower() if self.any_case and isinstance(raw, str) else raw
        if isinstance(given, str) and given in self.choices:
            return given
        raise InvalidArgument(self.name, f"must be {self.alternatives}, got {raw!r}")

    @property
    def alternatives(self) -> str:
        """The choices in words: "a", "a or b", "a, b or c"; a longer list as "one of a, b, c, d"."""
        *first, last = self.choices
        if len(first) > 2:
            return f"one of {', '.join(self.choices)}"
        return f"{', '.join(first)} or {last}" if first else last

    def identifier(self, query: Given) -> str:
        """An identifier without the ASCII white space around it; code 2 when nothing is left
        (or nothing is given)."""
        raw = query.get(self.name)
        if type(raw) is str:  # the request path's case, without a second call
            text: str | None = raw.strip(BLANK)
            if text:
                return text
        text = self.text(query)
        if text is None:
            raise self.missing()
        return text

    def text(self, query: Given) -> str | None:
        """Text without the ASCII white space around it; ``None`` when absent and not required.
        Code 2 when nothing is left, or when a write's field is not text."""
        raw = query.get(self.name)
        if raw is None:
            if self.required:
                raise self.missing()
            return None
        if not isinstance(raw, str):
            raise InvalidArgument(self.name, "must be a non-blank string")
        text = raw.strip(BLANK)
        if not text:
            raise self.missing()
        return text

    def items(self, query: Given) -> list[str] | None:
        """A list of text (a JSON array, or comma-separated); ``None`` when absent and not
        required. Its items are checked by the operation (``choices`` says which it takes)."""
        raw = query.get(self.name)
        if raw is None:
            if self.required:
                raise self.missing()
            return None
        if isinstance(raw, str):
            raw = [v.strip() for v in raw.split(",") if v.strip()]
        if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
            raise InvalidArgument(self.name, f"must be {self.wanted}")
        return raw

    def cursor(self, query: Given) -> str | None:
        """A walk's position as given; ``None`` when absent or empty (the walk's start)."""
        raw = query.get(self.name)
        if raw is not None and not isinstance(raw, str):
            raise InvalidArgument(self.name, "not a cursor of this list; start again without it")
        return raw or None


@dataclass(frozen=True, slots=True)
class Variant:
    """A response body per shape; ``feature`` as for parameters."""

    models: Mapping[Shape, Any]
    """Each shape's model: a type pydantic reads (a TypedDict, a list of one...)."""
    feature: str | None = None

    @property
    def served(self) -> bool:
        return self.feature not in PENDING


def same(model: Any) -> Mapping[Shape, Any]:
    """One model for both shapes."""
    return dict.fromkeys(SHAPES, model)


def shaped(a: Any, b: Any) -> Mapping[Shape, Any]:
    return {"A": a, "B": b}


BASE_ERRORS: tuple[type[ApiError], ...] = (
    InvalidArgument,
    KeyMissing,
    Unauthenticated,
    MethodNotAllowed,
    RateLimited,
    InternalError,
)
"""What every operation can answer with (code 15 also as 503, see the errors module)."""
READ_ERRORS: tuple[type[ApiError], ...] = (*BASE_ERRORS, DeadlineExceeded)
"""What every read of the catalogue can answer with besides: code 16 at the request deadline."""


@dataclass(frozen=True, slots=True)
class Operation:
    """One API operation; its path is ``/1.0/<name>.json``."""

    name: str
    tag: Tag
    summary: str
    doc: str
    parameters: tuple[Parameter, ...]
    responses: tuple[Variant, ...]
    errors: tuple[type[ApiError], ...] = READ_ERRORS
    invalid: str = ""
    """How the document words this operation's code 2 ("invalid <this>")."""
    counted: bool = True
    """Counted in the caller's usage (every API operation is; a 304 too)."""
    etag: bool = False
    """Carries an ``ETag`` and answers ``If-None-Match`` with 304."""
    example: Mapping[str, str] = field(default_factory=dict)
    """Arguments with which the demo's first application gets a 200."""
    client: str = ""
    """The typed client's method and the ``pkgcat client`` command (default: the name's last part)."""
    method: Method = "GET"
    """Reads are GET; writes are POST (and need ``scope``)."""
    scope: KeyScope = "read"
    """The scope the caller's key needs: ``read`` (every key) for reads."""
    bodies: tuple[str, ...] = ()
    """A write's accepted request bodies, by media type (the first is the plain one). A write
    of :data:`FIELDS` bodies takes its parameters there, not in the query."""
    command: str = ""
    """The ``pkgcat client`` command, words of a group first (default: :attr:`client_name`)."""
    public: bool = False
    """Also called with a public key (``public_key=`` or the Bearer header): the licence check."""

    @property
    def path(self) -> str:
        return f"/{VERSION}/{self.name}.json"

    @property
    def writes(self) -> bool:
        return self.method == "POST"

    @property
    def client_name(self) -> str:
        return self.client or self.name.rsplit("/", 1)[1]

    @property
    def command_path(self) -> tuple[str, ...]:
        """The ``pkgcat client`` command's words: ``("webhook", "create")``."""
        return tuple((self.command or self.client_name).split())

    @property
    def fields(self) -> bool:
        """Whether the parameters come in the body (JSON or a form), as a write's fields."""
        return self.writes and JSON in self.bodies

    @property
    def operation_id(self) -> str:
        """The OpenAPI ``operationId``: the name's last part for the first three
        operations (as published), both parts joined for the others."""
        return _OPERATION_IDS.get(self.name, re.sub(r"[/-]", "_", self.name))

    def served_parameters(self) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if p.served)

    def parameter(self, name: str) -> Parameter:
        (found,) = (p for p in self.parameters if p.name == name)
        return found


_OPERATION_IDS = {
    "application/usage": "usage",
    "package/details": "details",
    "package/buyers": "buyers",
}

# --- parameters ----------------------------------------------------------------------------------

PACKAGE = Parameter(
    "package",
    "string",
    "Identifier of the package. ASCII white space (space, tab, line feed, carriage "
    "return, vertical tab, form feed) around it is ignored; it must hold another character.",
    required=True,
    example="com.havoclabs.velvet",  # the demo's paid package (`pkgcat demo`)
)
LIMIT = Parameter(
    "limit",
    "integer",
    f"Page size; values above {LIMIT_MAX} are clamped to {LIMIT_MAX}.",
    default=LIMIT_DEFAULT,
    minimum=1,
    maximum=INTEGER_MAX,
)
PAGE = Parameter(
    "page", "integer", "Page number, from 1.", default=1, minimum=1, maximum=INTEGER_MAX
)
DAYS = Parameter(
    "days",
    "integer",
    "Days before today to include.",
    default=DAYS_DEFAULT,
    minimum=1,
    maximum=DAYS_MAX,
)
CURSOR = Parameter(
    "cursor",
    "cursor",
    "Opaque position of a walk: empty to start, then the previous page's `cursor`.",
)
START = Parameter("start", "day", "First day (YYYY-MM-DD) in the application's time zone.")
END = Parameter("end", "day", "Last day (YYYY-MM-DD), inclusive; not after today.")
OPTIONAL_PACKAGE = Parameter(
    "package", "string", "Only this package of the caller's source.", example=PACKAGE.example
)


def _pending(parameter: Parameter, feature: str) -> Parameter:
    return replace(parameter, feature=feature)


BUYER_KEYS = ("nickname", "account", "udid")
"""What a buyer of an ownership check is known by: exactly one of them is given."""


def buyer(query: Query) -> tuple[str, str, str | None]:
    """``package/check``'s buyer: which of :data:`BUYER_KEYS` is given, its value, and the
    device model (only with ``udid``). Code 2 unless exactly one is given, not empty."""
    given = [name for name in BUYER_KEYS if name in query]
    if len(given) != 1:
        # None given: the first is missing; several: the second is one too many.
        raise InvalidArgument(
            given[1] if given else BUYER_KEYS[0],
            "give exactly one of nickname, account and udid"
            + (f" (got {' and '.join(given)})" if given else ""),
        )
    by = given[0]
    value = query[by]
    if not value.strip(BLANK):
        raise InvalidArgument(by, "empty; give a value")
    model = query.get("model")
    if model is not None and by != "udid":
        raise InvalidArgument("model", "only together with udid")
    if model is not None and not model.strip(BLANK):
        raise InvalidArgument("model", "empty; give a device model or leave it out")
    return by, value, model


def days_and_range() -> InvalidArgument:
    """The refusal of ``days`` given with ``start`` or ``end``."""
    return InvalidArgument("days", "give days, or start and end, not both")


# --- the table -----------------------------------------------------------------------------------

_OWN_PACKAGE_ERRORS = (*READ_ERRORS, PackageNotFound, PermissionDenied)

_EXACTLY_ONE = "Exactly one of `nickname`, `account` and `udid` is given."

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "application/usage",
        "application",
        "Requests per day of the calling application",
        "`days + 1` entries, oldest first: today and the `days` before it in the "
        "application's time zone, days without requests at 0. This request is counted "
        "in today's entry.",
        (
            DAYS,
            _pending(START, "usage-range"),
            _pending(END, "usage-range"),
            Parameter(
                "by",
                "choice",
                "`operation`: split each day's count by operation.",
                choices=("operation",),
                feature="usage-by",
            ),
        ),
        (
            Variant(shaped(list[m.UsageEntryA], list[m.UsageEntryB])),
            Variant(
                shaped(list[m.UsageOperationsEntryA], list[m.UsageOperationsEntryB]),
                feature="usage-by",
            ),
        ),
        invalid="days",
    ),
    Operation(
        "package/details",
        "package",
        "Details of one package",
        "Any online package; an offline package only for applications of its own source.",
        (PACKAGE,),
        (Variant(shaped(m.PackageA, m.PackageB)),),
        errors=(*READ_ERRORS, PackageNotFound),
        invalid="package",
        client="package",
        etag=True,
        example={"package": "com.havoclabs.velvet"},
    ),
    Operation(
        "package/buyers",
        "package",
        "Buyers of a paid package of the caller's source",
        "Newest purchase first, ties by txn_id. Purchases of the whole source "
        "(allowed_for=source) count for every paid package of it. A page past the end "
        "is empty and carries the true total.",
        (PACKAGE, LIMIT, PAGE, _pending(CURSOR, "buyers-cursor")),
        (
            Variant(same(m.BuyersPage)),
            Variant(same(m.BuyersCursorPage), feature="buyers-cursor"),
        ),
        errors=_OWN_PACKAGE_ERRORS,
        invalid="package, limit, page, or a free package",
        etag=True,
        example={"package": "com.havoclabs.velvet"},
    ),
    Operation(
        "source/packages",
        "source",
        "The caller's own packages",
        "Online and offline, ordered by package identifier.",
        (
            Parameter("paid", "flag", "1: only paid packages; 0: only free ones."),
            Parameter("online", "flag", "1: only online packages; 0: only offline ones."),
            LIMIT,
            CURSOR,
        ),
        (Variant(shaped(m.SourcePackagesA, m.SourcePackagesB)),),
        invalid="paid, online, limit or cursor",
        etag=True,
    ),
    Operation(
        "package/check",
        "package",
        "Whether a buyer or a device owns a package",
        "Give exactly one of `nickname`, `account` and `udid`; `model` only with `udid`. "
        "Refunded and charged-back purchases never count; the earliest owning purchase wins. "
        "A check by `udid` also answers YouRepo's `udid` and `check` (`success` or `fail`), "
        "and may be made with a public key (`public_key=` or the Bearer header), whose answer "
        "says owned or not and nothing more.",
        (
            PACKAGE,
            Parameter("nickname", "string", f"The buyer's nickname. {_EXACTLY_ONE}"),
            Parameter("account", "string", f"The buyer's account id. {_EXACTLY_ONE}"),
            Parameter("udid", "string", f"A device id the buyer registered. {_EXACTLY_ONE}"),
            Parameter("model", "string", "The device's model (only with `udid`)."),
        ),
        (Variant(same(m.Ownership)),),
        client="check",
        errors=_OWN_PACKAGE_ERRORS,
        public=True,
        invalid="package, nickname, account, udid or model",
        etag=True,
        example={"package": "com.havoclabs.velvet", "nickname": "alice"},
    ),
    Operation(
        "source/sales",
        "source",
        "The sales ledger of the caller's source",
        "Purchases between `start` and `end` (days in the application's time zone, "
        "inclusive; the last 30 days by default), newest first, ties by txn_id, with "
        "totals per currency over the whole range and filters.",
        (
            START,
            END,
            OPTIONAL_PACKAGE,
            Parameter(
                "status",
                "choice",
                "Only purchases of this status (case-insensitive).",
                choices=("completed", "refunded", "chargeback"),
                any_case=True,
            ),
            LIMIT,
            CURSOR,
        ),
        (Variant(same(m.Sales)),),
        errors=_OWN_PACKAGE_ERRORS,
        invalid="start, end, package, status, limit or cursor",
        etag=True,
    ),
    Operation(
        "package/downloads",
        "package",
        "Daily downloads of one of the caller's packages",
        "Whole .deb files the served repository sent, per UTC day, oldest first, days "
        "without any at 0, and their total: the last `days` days and today, or `start` "
        "to `end` (at most 365 days). A whole file is a download answered 200 to its "
        "end, or a range that ends at the file's last byte (a resumed download's end).",
        (
            PACKAGE,
            DAYS,
            replace(START, doc="First day (YYYY-MM-DD, UTC)."),
            replace(END, doc="Last day (YYYY-MM-DD, UTC), inclusive; not after today."),
        ),
        (Variant(shaped(m.DownloadsA, m.DownloadsB)),),
        errors=_OWN_PACKAGE_ERRORS,
        invalid="package, days, start or end",
        client="downloads",
        etag=True,
        example={"package": "com.havoclabs.velvet"},
    ),
    Operation(
        "package/whitelist",
        "package",
        "The devices on the whitelist of one of the caller's packages",
        "YouRepo's whitelist: the devices the seller allows the package whatever they "
        "bought, by udid, a page at a time (`start` is `(page - 1) * limit`). A page past "
        "the end is empty and carries the true total.",
        (PACKAGE, LIMIT, PAGE),
        (Variant(same(m.WhitelistPage)),),
        errors=_OWN_PACKAGE_ERRORS,
        invalid="package, limit or page",
        client="whitelist",
        command="whitelist list",
        example={"package": "com.havoclabs.velvet"},
    ),
)

JSON = "application/json"
URLENCODED = "application/x-www-form-urlencoded"
FIELDS = (JSON, URLENCODED)
"""The bodies of a write of fields: a JSON object, or a form as Disqus took."""
DEB = "application/vnd.debian.binary-package"
"""The media type of a .deb (IANA), the body of ``package/upload``."""
FORM = "multipart/form-data"

WRITE_ERRORS: tuple[type[ApiError], ...] = (*BASE_ERRORS, ScopeMissing, RequestInProgress)
"""What every write can answer with besides: a key without the write's scope, and its
Idempotency-Key still held by the same request in progress."""

WRITES: tuple[Operation, ...] = (
    Operation(
        "package/upload",
        "package",
        "Publish a .deb to the caller's source",
        "The body is the .deb itself (`Content-Type: application/vnd.debian.binary-package`) "
        "or a multipart form with the file in a part named `file`. The file is checked whole "
        "before anything is stored; the answer is the package's details. Needs a key with "
        "the `publish` scope. Safe to retry with an `Idempotency-Key` header.",
        (),
        (Variant(shaped(m.PackageA, m.PackageB)),),
        errors=WRITE_ERRORS,
        invalid="file (not a .deb, over the size limit, a package id with capitals, another "
        "source's package in any letter case, a version published with other bytes under "
        "any spelling) or Idempotency-Key",
        client="upload",
        method="POST",
        scope="publish",
        bodies=(DEB, FORM),
    ),
)
"""The write operations: POST, in the same envelope, each needing its scope."""

UDIDS = Parameter(
    "udid",
    "list",
    "Device UDIDs (1 to 64 letters, digits and `-`), at most 500: a JSON array, or in a "
    "form comma-separated or repeated.",
    required=True,
    example="00008030-001A2D3E0C42802E",
    wanted="a list of device UDIDs",
)
_LISTED = (
    "Idempotent: a device already as asked is counted as unchanged. Needs a key with the "
    "`whitelist` scope. Safe to retry with an `Idempotency-Key` header."
)
WHITELIST_WRITES: tuple[Operation, ...] = (
    Operation(
        "package/whitelist/add",
        "package",
        "Put devices on the whitelist of one of the caller's packages",
        "Each device then owns the package for the licence checks, the store and Cydia's "
        "gate; one already there with another description has it replaced. " + _LISTED,
        (
            PACKAGE,
            UDIDS,
            Parameter(
                "description",
                "string",
                "A note kept with every device of the request (at most 200 printable "
                "characters); empty when not given.",
            ),
        ),
        (Variant(same(m.WhitelistChange)),),
        errors=(*WRITE_ERRORS, PackageNotFound, PermissionDenied),
        invalid="package, udid or description",
        client="whitelist_add",
        command="whitelist add",
        method="POST",
        scope="whitelist",
        bodies=FIELDS,
    ),
    Operation(
        "package/whitelist/remove",
        "package",
        "Take devices off the whitelist of one of the caller's packages",
        "A device not on it is counted as unchanged. " + _LISTED,
        (PACKAGE, UDIDS),
        (Variant(same(m.WhitelistChange)),),
        errors=(*WRITE_ERRORS, PackageNotFound, PermissionDenied),
        invalid="package or udid",
        client="whitelist_remove",
        command="whitelist remove",
        method="POST",
        scope="whitelist",
        bodies=FIELDS,
    ),
)
"""The whitelist's writes: fields in the body, as the webhook writes take them."""

# --- webhooks ------------------------------------------------------------------------------------

_HOOK = "Needs a key with the `webhooks` scope; only the caller's application's endpoints."
_RETRY = "Safe to retry with an `Idempotency-Key` header."
ENDPOINT = Parameter(
    "endpoint",
    "string",
    "The endpoint's id (`we_...`), as created.",
    required=True,
    wanted="an endpoint identifier",
)
_EVENTS_DOC = "Event types to send: a JSON array, or in a form comma-separated or repeated."
URL = Parameter(
    "url",
    "string",
    "An https:// address that resolves to no private, loopback or link-local address.",
    required=True,
    wanted="an https:// address",
)
EVENTS = Parameter(
    "events",
    "list",
    _EVENTS_DOC,
    required=True,
    choices=EVENT_TYPES,
    example="sale.completed",
    wanted="a list of event types",
)
_HOOK_ERRORS = (*WRITE_ERRORS, WebhookNotFound)
_WRITE_ONLY = frozenset({RequestInProgress})
"""A webhook read has no Idempotency-Key, so none of its claims in progress."""


def _hook(
    verb: str,
    summary: str,
    doc: str,
    parameters: tuple[Parameter, ...],
    model: Any,
    invalid: str,
    method: Method = "POST",
) -> Operation:
    """A ``webhook/<verb>`` operation: a write of fields (POST), or a read (GET)."""
    writes = method == "POST"
    return Operation(
        f"webhook/{verb}",
        "webhook",
        summary,
        f"{doc} {_HOOK} {_RETRY}" if writes else f"{doc} {_HOOK}",
        parameters,
        (Variant(same(model)),),
        errors=tuple(
            e
            for e in (_HOOK_ERRORS if ENDPOINT in parameters else WRITE_ERRORS)
            if writes or e not in _WRITE_ONLY
        ),
        invalid=invalid,
        client="webhook_" + verb.replace("-", "_"),
        command=f"webhook {verb}",
        method=method,
        scope="webhooks",
        bodies=FIELDS if writes else (),
    )


WEBHOOKS: tuple[Operation, ...] = (
    _hook(
        "create",
        "Add a webhook endpoint to the caller's application",
        "The answer holds the endpoint and its signing secret, shown this once.",
        (URL, EVENTS),
        m.WebhookSecret,
        "url (not https, or resolving to a refused address) or events",
    ),
    _hook(
        "list",
        "The caller's application's webhook endpoints",
        "Oldest first, enabled or not (a disabled one says why); never their secrets.",
        (),
        m.WebhookEndpoints,
        "argument",
        method="GET",
    ),
    _hook(
        "update",
        "Change a webhook endpoint",
        "Give any of `url`, `events` and `enabled`; enabling forgets past failures.",
        (
            ENDPOINT,
            replace(URL, required=False),
            replace(EVENTS, required=False),
            Parameter("enabled", "flag", "1: enable (failures forgotten); 0: disable."),
        ),
        m.WebhookEndpoint,
        "endpoint, url, events or enabled",
    ),
    _hook(
        "delete",
        "Delete a webhook endpoint",
        "The endpoint and its delivery log go; its events are no longer sent.",
        (ENDPOINT,),
        m.WebhookDeleted,
        "endpoint",
    ),
    _hook(
        "roll-secret",
        "Start a new signing secret for a webhook endpoint",
        "The new secret is shown this once; the current one keeps signing beside it for "
        "24 hours, so receivers can change over.",
        (ENDPOINT,),
        m.WebhookSecret,
        "endpoint",
    ),
    _hook(
        "redeliver",
        "Send one event to a webhook endpoint again, now",
        "Posted at once, signed as any delivery, logged with the endpoint's attempts; not "
        "retried. The answer is the attempt.",
        (
            ENDPOINT,
            Parameter(
                "event",
                "string",
                "The event's id (`evt_...`).",
                required=True,
                wanted="an event identifier",
            ),
        ),
        m.WebhookAttempt,
        "endpoint or event",
    ),
    _hook(
        "test",
        "Send a sample event to a webhook endpoint, now",
        'A made-up event of the type given, marked `"test": true`, posted at once and '
        "logged; not retried. The answer is the attempt.",
        (
            ENDPOINT,
            Parameter(
                "event_type",
                "choice",
                "The event type of the sample.",
                required=True,
                choices=EVENT_TYPES,
                any_case=True,
            ),
        ),
        m.WebhookAttempt,
        "endpoint or event_type",
    ),
    _hook(
        "deliveries",
        "The delivery log of a webhook endpoint",
        "Each attempt's time, outcome, HTTP status, duration and the first bytes of the "
        "answer, newest first.",
        (ENDPOINT, LIMIT, CURSOR),
        m.WebhookDeliveries,
        "endpoint, limit or cursor",
        method="GET",
    ),
)
"""The webhook endpoints of the caller's application, managed with a key of the scope."""

# --- money ---------------------------------------------------------------------------------------

_TEST_MONEY = (
    "Test money (a test-mode store's sales) is kept apart, each entry and payout marked `test`."
)
MONEY: tuple[Operation, ...] = (
    Operation(
        "source/balance",
        "source",
        "The caller's source's balances",
        "Per currency: what its store sales left pending (held until their release), what is "
        "available to be paid out, and the next payout: its date, its amount, and why none "
        f"would be made then (no payout account, below the minimum). {_TEST_MONEY} Read live: "
        "no ETag.",
        (),
        (Variant(same(m.Balances)),),
        client="balance",
        command="money balance",
    ),
    Operation(
        "source/payouts",
        "source",
        "The caller's source's payouts",
        f"Newest first, each with the ledger entries it paid (its own debit last). {_TEST_MONEY}",
        (LIMIT, CURSOR),
        (Variant(same(m.Payouts)),),
        invalid="limit or cursor",
        client="payouts",
        command="money payouts",
    ),
    Operation(
        "purchase/refund",
        "source",
        "Refund a store purchase of the caller's source",
        "Through the payment platform, all that is left of it or `amount`. Refunded whole, "
        "the purchase is Refunded: its devices no longer own it, and `sale.refunded` is sent. "
        "The seller's balance is debited the refund less the commission's share of it. "
        "Needs a key with the `money` scope. Safe to retry with an `Idempotency-Key` header: "
        "the refund is made once.",
        (
            Parameter(
                "txn_id",
                "string",
                "The store purchase's transaction id, as `source/sales` lists it.",
                required=True,
                wanted="a store purchase's txn_id",
            ),
            Parameter(
                "amount",
                "string",
                "A decimal amount in the purchase's currency, at most what is left to refund; "
                "absent: all of it.",
                example="1.00",
            ),
        ),
        (Variant(same(m.Refund)),),
        errors=WRITE_ERRORS,
        invalid="txn_id (not a completed store purchase of the caller's source) or amount",
        client="refund",
        command="money refund",
        method="POST",
        scope="money",
        bodies=FIELDS,
    ),
)
"""The seller's money: balances, payouts, and refunds of store purchases."""

OPERATIONS = (*OPERATIONS, *WRITES, *WHITELIST_WRITES, *WEBHOOKS, *MONEY)

BY_NAME: Mapping[str, Operation] = {operation.name: operation for operation in OPERATIONS}
BY_PATH: Mapping[str, Operation] = {operation.path: operation for operation in OPERATIONS}


H = TypeVar("H")


def routes(handlers: Mapping[str, H]) -> dict[str, H]:
    """Each served operation's path to its handler (``handlers`` names operations of the table)."""
    unknown = set(handlers) - set(BY_NAME)
    if unknown:
        raise LookupError(f"handlers of operations not in the table: {sorted(unknown)}")
    return {BY_NAME[name].path: handler for name, handler in handlers.items()}
