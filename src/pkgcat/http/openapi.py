"""The OpenAPI 3.1 document, written by hand and checked against the server by the tests.

It states both response shapes (``oneOf`` A and B), every parameter with its
bounds, and every error of :data:`pkgcat.errors.ERROR_TABLE` each operation
can answer with. ``tests/functional`` validates every response it receives
against this document.
"""

from __future__ import annotations

from typing import Any

from pkgcat import __version__
from pkgcat.errors import ERROR_TABLE, ApiError, InternalError, Unavailable
from pkgcat.http.params import INTEGER_MAX
from pkgcat.services import (
    BLANK,
    DAYS_DEFAULT,
    DAYS_MAX,
    LIMIT_DEFAULT,
    LIMIT_MAX,
    RANGE_MAX,
    USAGE_BY,
)

Schema = dict[str, Any]

ISO_DATETIME = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$"
ISO_MIDNIGHT = r"^\d{4}-\d{2}-\d{2}T00:00:00[+-]\d{2}:\d{2}$"
B_USAGE_DATE = r"^\d{2}-\d{2}-\d{4} 00:00:00$"
B_DATE = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$"
DIGITS = r"^\d+$"
DECIMAL = r"^\d+\.\d{2,}$"
"""Amounts: a point and at least two decimals (shapes.py writes them so)."""
CURRENCY = r"^[A-Z]{3}$"


def _string(description: str, pattern: str | None = None) -> Schema:
    schema: Schema = {"type": "string", "description": description}
    if pattern:
        schema["pattern"] = pattern
    return schema


def _object(properties: dict[str, Schema], description: str) -> Schema:
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _package(shape: str) -> Schema:
    a = shape == "A"
    address = r"^https://" if a else r"^http://"
    # A repository may give no icon or page for a package: then the field is empty.
    optional_address = r"^(https://|$)" if a else r"^(http://|$)"
    props: dict[str, Schema] = {
        "package": _string("Identifier, reverse-domain style."),
        "name": _string("Display name."),
        "date": _string(
            "Release date of this version in the application's time zone.",
            ISO_DATETIME if a else B_DATE,
        ),
        "version": _string("Version string."),
    }
    if a:
        props["architecture"] = _string("Debian architecture (shape A only).")
    props |= {
        "author": _string("Author name."),
        "section": _string("Category name."),
        "description": _string("Short description."),
        "pre-depends": _string("Raw Pre-Depends field; may be empty."),
        "depends": _string("Raw Depends field; may be empty."),
        "conflicts": _string("Raw Conflicts field; may be empty."),
    }
    if a:
        props["replaces"] = _string("Raw Replaces field; may be empty (shape A only).")
    props["size"] = _string("Size of the .deb file in bytes.", DIGITS)
    props["md5sum"] = _string("MD5 of the .deb file.", r"^[0-9a-f]{32}$")
    if a:
        props["sha256"] = _string(
            "SHA-256 of the .deb file (shape A only); '' when the repository lists none.",
            r"^([0-9a-f]{64})?$",
        )
    props |= {
        "long_description": _string("Long description."),
        "compatible": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Compatible platform labels, such as 'iOS 15'.",
        },
        "total_download": _string("Download count.", DIGITS),
        "total_votes": _string("Number of ratings.", DIGITS),
        "total_value_votes": _string(
            "Sum of the 1-5 ratings (average = this / total_votes).", DIGITS
        ),
        "online": _string(
            "'1' online; '0' offline (seen only by the package's own source).", r"^[01]$"
        ),
        "price": _string(
            "Price; '0.00' for a free package; '' for a paid package whose price is not known yet.",
            r"^(\d+\.\d{2,})?$",
        ),
        "currency": _string("ISO 4217 currency code.", CURRENCY),
        "source": _ref(f"Source{shape}"),
        "icon": _string("Address of the icon; '' when there is none.", optional_address),
        "screenshots": {
            "type": "array",
            "items": _string("Address of a screenshot.", address),
        },
        "url": _string("Address of the package page; '' when there is none.", optional_address),
    }
    return _object(props, f"Package details, shape {shape} (spec 2.2).")


def _source(shape: str) -> Schema:
    props: dict[str, Schema] = {"name": _string("Name of the source.")}
    if shape == "A":
        props["origin"] = _string("Origin of the repository (shape A only).")
    props["url"] = _string("Address of the source.", r"^https://" if shape == "A" else r"^http://")
    return _object(props, f"Source, shape {shape} (spec 2.3).")


DAY = r"^\d{4}-\d{2}-\d{2}$"
SIGNED_DECIMAL = r"^-?\d+\.\d{2,}$"
_SCOPE: Schema = {"type": "string", "enum": ["package", "source"]}
_WALK: dict[str, Schema] = {
    "has_more": {"type": "boolean", "description": "Whether another page follows."},
    "cursor": {
        "type": ["string", "null"],
        "maxLength": 512,
        "description": "Pass as `cursor` for the next page; null on the last page.",
    },
}


def _nullable(schema: Schema) -> Schema:
    return {**schema, "type": [schema["type"], "null"]}


def _own_package(shape: str) -> Schema:
    count: Schema = {"type": "integer", "minimum": 0}
    return _object(
        {
            "package": _string("Identifier."),
            "name": _string("Display name."),
            "version": _string("Version string."),
            "online": {"type": "boolean"},
            "paid": {"type": "boolean"},
            "price": _nullable(
                _string("Price; '0.00' free; null while a paid price is unknown.", DECIMAL)
            ),
            "currency": _string("ISO 4217 currency code.", CURRENCY),
            "downloads": count,
            "votes": count,
            "rating": {
                "type": ["number", "null"],
                "minimum": 1,
                "maximum": 5,
                "description": "Mean rating (2 decimals); null without votes.",
            },
            "updated": _string(
                "When this version was released.", ISO_DATETIME if shape == "A" else B_DATE
            ),
        },
        f"One of the caller's packages, shape {shape}.",
    )


def _packages_page(shape: str) -> Schema:
    return _object(
        {
            "packages": {
                "type": "array",
                "items": _ref(f"OwnPackage{shape}"),
                "maxItems": LIMIT_MAX,
            },
            "limit": {"type": "integer", "minimum": 1, "maximum": LIMIT_MAX},
            **_WALK,
        },
        f"A page of the caller's packages, shape {shape}.",
    )


def _split_by_operation(entry: Schema) -> Schema:
    """A usage entry with its optional ``operations`` (only with ``by=operation``)."""
    entry["properties"]["operations"] = {
        "type": "object",
        "description": (
            "With `by=operation` only: the day's requests by operation, those with none left out."
        ),
        "additionalProperties": {"type": "integer", "minimum": 1},
    }
    return entry


def _schemas() -> dict[str, Schema]:
    return {
        "UsageEntryA": _split_by_operation(
            _object(
                {
                    "date": _string("Midnight of the day, with the zone's offset.", ISO_MIDNIGHT),
                    "usage": {"type": "integer", "minimum": 0, "description": "Requests that day."},
                },
                "One day of usage, shape A (spec 2.1).",
            )
        ),
        "UsageEntryB": _split_by_operation(
            _object(
                {
                    "date": _string("Midnight of the day, DD-MM-YYYY.", B_USAGE_DATE),
                    "usage": {
                        "description": "Requests that day; the last entry carries it as digits.",
                        "oneOf": [
                            {"type": "integer", "minimum": 0},
                            {"type": "string", "pattern": DIGITS},
                        ],
                    },
                },
                "One day of usage, shape B (spec 2.1).",
            )
        ),
        "PackageA": _package("A"),
        "PackageB": _package("B"),
        "SourceA": _source("A"),
        "SourceB": _source("B"),
        "Buyer": _object(
            {
                "nickname": _string("Buyer's nickname."),
                "status": _string("Payment status, such as 'Completed'."),
                "total": _string("Amount paid.", DECIMAL),
                "commission": _string("Commission on the amount.", DECIMAL),
                "currency": _string("ISO 4217 currency code.", CURRENCY),
                "date": _string("When the purchase was made.", ISO_DATETIME),
                "txn_id": _string("Transaction id at the payment platform."),
                "profile_url": _string("Address of the buyer's profile."),
                "allowed_for": {
                    "type": "string",
                    "enum": ["package", "source"],
                    "description": "'package': this package; 'source': every paid package of the source.",
                },
                "payment_platform": _string("Payment platform, lower case.", r"^[a-z0-9_.-]+$"),
            },
            "One buyer (spec 2.5).",
        ),
        "BuyersPage": _object(
            {
                "start": {"type": "integer", "minimum": 0, "description": "(page - 1) * limit."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": LIMIT_MAX,
                    "description": "Page size applied.",
                },
                "total": _string("Total number of buyers.", DIGITS),
                "page": {"type": "integer", "minimum": 1},
                "buyers": {"type": "array", "items": _ref("Buyer"), "maxItems": LIMIT_MAX},
            },
            "A page of buyers (spec 2.4).",
        ),
        "BuyersWalk": _object(
            {
                "limit": {"type": "integer", "minimum": 1, "maximum": LIMIT_MAX},
                "total": _string("Total number of buyers.", DIGITS),
                "buyers": {"type": "array", "items": _ref("Buyer"), "maxItems": LIMIT_MAX},
                **_WALK,
            },
            "Buyers in cursor mode (with `cursor`): keyset pages.",
        ),
        "OwnPackageA": _own_package("A"),
        "OwnPackageB": _own_package("B"),
        "SourcePackagesA": _packages_page("A"),
        "SourcePackagesB": _packages_page("B"),
        "Check": _object(
            {
                "package": _string("The package checked."),
                "owned": {"type": "boolean"},
                "since": _nullable(_string("When the owning purchase was made.", ISO_DATETIME)),
                "purchase": {
                    "oneOf": [
                        _object(
                            {"txn_id": _string("Its transaction id."), "allowed_for": _SCOPE},
                            "The earliest completed purchase that owns the package.",
                        ),
                        {"type": "null"},
                    ]
                },
            },
            "Whether a buyer owns a package.",
        ),
        "Sale": _object(
            {
                "txn_id": _string("Transaction id at the payment platform."),
                "date": _string("When the purchase was made.", ISO_DATETIME),
                "package": _nullable(_string("The package; null for a whole-source purchase.")),
                "allowed_for": _SCOPE,
                "nickname": _string("Buyer's nickname."),
                "status": _string("Completed, Refunded or Chargeback."),
                "gross": _string("Amount paid.", DECIMAL),
                "commission": _string("Commission on the amount.", DECIMAL),
                "net": _string("gross - commission.", SIGNED_DECIMAL),
                "currency": _string("ISO 4217 currency code.", CURRENCY),
                "payment_platform": _string("Payment platform, lower case."),
            },
            "One purchase of the sales ledger.",
        ),
        "SalesTotal": _object(
            {
                "currency": _string("ISO 4217 currency code.", CURRENCY),
                "sales": {"type": "integer", "minimum": 0, "description": "Completed count."},
                "gross": _string("Sum of completed amounts.", DECIMAL),
                "commission": _string("Sum of their commissions.", DECIMAL),
                "net": _string("gross - commission.", SIGNED_DECIMAL),
                "refunds": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Refunded and charged-back count.",
                },
                "refunded": _string("Sum of their amounts.", DECIMAL),
            },
            "Totals of one currency over the whole range and filters.",
        ),
        "SalesPage": _object(
            {
                "start": _string("First day (application's zone).", DAY),
                "end": _string("Last day, included.", DAY),
                "sales": {"type": "array", "items": _ref("Sale"), "maxItems": LIMIT_MAX},
                "totals": {"type": "array", "items": _ref("SalesTotal")},
                "limit": {"type": "integer", "minimum": 1, "maximum": LIMIT_MAX},
                **_WALK,
            },
            "A page of the sales ledger, newest first, with the totals of all of it.",
        ),
        "Error": _object(
            {
                "code": {"type": "integer", "enum": [e.code for e in ERROR_TABLE]},
                "response": _string("What went wrong, naming the parameter at fault."),
            },
            "Error envelope.",
        ),
    }


def _success(description: str, schema: Schema) -> Schema:
    return {
        "description": description,
        "headers": _RATE_HEADERS,
        "content": {
            "application/json": {
                "schema": _object(
                    {"code": {"type": "integer", "const": 0}, "response": schema},
                    "Success envelope.",
                )
            }
        },
    }


_HEADER = {"schema": {"type": "integer"}, "required": True}
_REQUEST_ID: dict[str, Schema] = {
    "X-Request-Id": {
        "schema": {"type": "string"},
        "required": True,
        "description": "Id of this request in the server's logs.",
    }
}
_RATE_HEADERS: dict[str, Schema] = {
    "RateLimit-Limit": {**_HEADER, "description": "Requests allowed per window."},
    "RateLimit-Remaining": {**_HEADER, "description": "Requests left in the window."},
    "RateLimit-Reset": {**_HEADER, "description": "Seconds until the window resets."},
} | _REQUEST_ID

_AUTHENTICATED_ERRORS = {2, 8, 12, 13}
"""Errors answered after the key was accepted: they carry the rate-limit headers."""


def _error(error: type[ApiError], description: str) -> Schema:
    headers = dict(_RATE_HEADERS if error.code in _AUTHENTICATED_ERRORS else _REQUEST_ID)
    if error.code == 13 or error is Unavailable:
        headers["Retry-After"] = {**_HEADER, "description": "Seconds to wait."}
    if error.code == 7:
        headers["Allow"] = {
            "schema": {"type": "string", "const": "GET"},
            "required": True,
            "description": "The one method the API paths accept.",
        }
    return {
        "description": f"code {error.code}: {description}",
        "headers": headers,
        "content": {
            "application/json": {
                "schema": {
                    "allOf": [
                        _ref("Error"),
                        {"properties": {"code": {"const": error.code}}},
                    ]
                }
            }
        },
    }


def _errors(*codes: int, arguments: str) -> dict[str, Schema]:
    """The error responses of an operation, described by the error table itself."""
    by_code = {e.code: e for e in ERROR_TABLE}
    errors = {
        str(by_code[c].status): _error(
            by_code[c], f"invalid {arguments}" if c == 2 else by_code[c].when
        )
        for c in codes
    }
    if InternalError.code in codes:  # code 15 is 503 when the database is locked or unreachable
        errors[str(Unavailable.status)] = _error(Unavailable, Unavailable.when)
    return errors


def _int_param(name: str, description: str, default: int, minimum: int, maximum: int) -> Schema:
    schema: Schema = {
        "type": "integer",
        "default": default,
        "minimum": minimum,
        "maximum": maximum,
    }
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


def _day_param(name: str, description: str) -> Schema:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": {"type": "string", "format": "date", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
    }


_BLANK_CLASS = "".join(f"\\x{ord(c):02x}" for c in BLANK)
_PACKAGE_PARAM: Schema = {
    "name": "package",
    "in": "query",
    "required": True,
    "description": (
        "Identifier of the package. ASCII white space (space, tab, line feed, carriage "
        "return, vertical tab, form feed) around it is ignored; it must hold another character."
    ),
    "schema": {"type": "string", "minLength": 1, "pattern": f"[^{_BLANK_CLASS}]"},
    "example": "com.havoclabs.velvet",  # the demo's paid package (`pkgcat demo`)
}


_LIMIT_PARAM = _int_param(
    "limit",
    f"Page size; values above {LIMIT_MAX} are clamped to {LIMIT_MAX}.",
    LIMIT_DEFAULT,
    1,
    INTEGER_MAX,
)


def _param(name: str, description: str, schema: Schema, *, required: bool = False) -> Schema:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "description": description,
        "schema": schema,
    }


_ANY_CASE_STATUS = "^({})$".format(
    "|".join(
        "".join(f"[{c.upper()}{c}]" for c in status)
        for status in ("completed", "refunded", "chargeback")
    )
)
"""The statuses in any case, written so that every regular-expression dialect reads it."""

_CURSOR_PARAM = _param(
    "cursor",
    "The `cursor` of the previous page, unchanged; absent (or empty) for the first page.",
    {"type": "string", "maxLength": 512},
)


def _flag(name: str, description: str) -> Schema:
    return _param(name, description, {"type": "integer", "minimum": 0, "maximum": 1})


def _seller_paths() -> dict[str, Schema]:
    text: Schema = {"type": "string", "minLength": 1}
    day: Schema = {"type": "string", "format": "date", "pattern": DAY}
    return {
        "/1.0/source/packages.json": {
            "get": {
                "operationId": "source_packages",
                "tags": ["source"],
                "summary": "The caller's own packages, online and offline",
                "description": "By package identifier; cursor pagination.",
                "parameters": [
                    _flag("paid", "1: only paid packages; 0: only free ones."),
                    _flag("online", "1: only online packages; 0: only offline ones."),
                    _LIMIT_PARAM,
                    _CURSOR_PARAM,
                ],
                "responses": {
                    "200": _success(
                        "A page of packages",
                        # An empty page is both shapes' at once.
                        {"anyOf": [_ref("SourcePackagesA"), _ref("SourcePackagesB")]},
                    ),
                    **_errors(2, 5, 7, 13, 15, arguments="paid, online, limit or cursor"),
                },
            }
        },
        "/1.0/package/check.json": {
            "get": {
                "operationId": "check",
                "tags": ["package"],
                "summary": "Whether a buyer owns a package of the caller's source",
                "description": (
                    "Exactly one of `nickname`, `account`, `udid`; `model` only with `udid`. "
                    "Completed purchases of the package or of its whole source count."
                ),
                "parameters": [
                    _PACKAGE_PARAM,
                    _param("nickname", "The buyer's nickname.", text),
                    _param("account", "The buyer's account id.", text),
                    _param("udid", "A device the buyer registered.", text),
                    _param("model", "The device's model (with `udid` only).", text),
                ],
                "responses": {
                    "200": _success("The answer", _ref("Check")),
                    **_errors(2, 5, 7, 8, 12, 13, 15, arguments="package or buyer"),
                },
            }
        },
        "/1.0/source/sales.json": {
            "get": {
                "operationId": "sales",
                "tags": ["source"],
                "summary": "The sales ledger of the caller's source",
                "description": (
                    "Purchases between midnight of `start` and midnight after `end` in the "
                    "application's zone, newest first, ties by txn_id; totals per currency "
                    "over the whole range and filters."
                ),
                "parameters": [
                    _param("start", "First day; default `end` - 29 days.", day),
                    _param("end", "Last day, included; default today; not after today.", day),
                    _param(
                        "package",
                        "Only this package's own purchases (allowed_for=package).",
                        text,
                    ),
                    _param(
                        "status",
                        "Only purchases of this status (any case).",
                        {"type": "string", "pattern": _ANY_CASE_STATUS},
                    ),
                    _LIMIT_PARAM,
                    _CURSOR_PARAM,
                ],
                "responses": {
                    "200": _success("A page of the ledger", _ref("SalesPage")),
                    **_errors(
                        2,
                        5,
                        7,
                        8,
                        12,
                        13,
                        15,
                        arguments="start, end, package, status, limit or cursor",
                    ),
                },
            }
        },
    }


def openapi_document() -> dict[str, Any]:
    """The whole document, as served at ``/openapi.json``."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Package Catalogue API",
            "version": __version__,
            "description": (
                "Daily API usage, package details and buyers of a paid package, for the "
                "developers who sell in an APT package catalogue. Every response is "
                '`{"code": 0, "response": ...}`; errors carry a non-zero code and a message. '
                "Two response shapes exist (A and B, see each schema); a client must accept both. "
                "Paths outside these operations answer code 1 (unknown endpoint under /1.0/) "
                "or code 6 (unknown API version), both with HTTP 404."
            ),
        },
        "servers": [{"url": "/"}],
        "security": [{"secretKey": []}, {"bearer": []}],
        "paths": {
            "/1.0/application/usage.json": {
                "get": {
                    "operationId": "usage",
                    "summary": "Requests per day of the calling application",
                    "description": (
                        "`days + 1` entries, oldest first: today and the `days` before it in "
                        "the application's time zone, days without requests at 0. This request "
                        "is counted in today's entry."
                    ),
                    "parameters": [
                        _int_param(
                            "days", "Days before today to include.", DAYS_DEFAULT, 1, DAYS_MAX
                        ),
                        _day_param(
                            "start",
                            "First day, in the application's time zone (instead of `days`; "
                            f"default: {DAYS_DEFAULT} days before `end`; at most {RANGE_MAX} "
                            "days up to `end`).",
                        ),
                        _day_param(
                            "end",
                            "Last day, in the application's time zone, not after today "
                            "(instead of `days`; default: today).",
                        ),
                        {
                            "name": "by",
                            "in": "query",
                            "required": False,
                            "description": "`operation`: each entry also splits its requests "
                            "by operation.",
                            "schema": {"type": "string", "enum": list(USAGE_BY)},
                        },
                    ],
                    "responses": {
                        "200": _success(
                            "Usage per day",
                            {
                                "oneOf": [
                                    {"type": "array", "items": _ref("UsageEntryA")},
                                    {"type": "array", "items": _ref("UsageEntryB")},
                                ]
                            },
                        ),
                        **_errors(2, 5, 7, 13, 15, arguments="days, start, end or by"),
                    },
                }
            },
            "/1.0/package/details.json": {
                "get": {
                    "operationId": "details",
                    "summary": "Details of one package",
                    "description": (
                        "Any online package; an offline package only for applications of its own source."
                    ),
                    "parameters": [_PACKAGE_PARAM],
                    "responses": {
                        "200": _success(
                            "The package", {"oneOf": [_ref("PackageA"), _ref("PackageB")]}
                        ),
                        **_errors(2, 5, 7, 8, 13, 15, arguments="package"),
                    },
                }
            },
            "/1.0/package/buyers.json": {
                "get": {
                    "operationId": "buyers",
                    "summary": "Buyers of a paid package of the caller's source",
                    "description": (
                        "Newest purchase first, ties by txn_id. Purchases of the whole source "
                        "(allowed_for=source) count for every paid package of it. A page past "
                        "the end is empty and carries the true total."
                    ),
                    "parameters": [
                        _PACKAGE_PARAM,
                        _int_param(
                            "limit",
                            f"Page size; values above {LIMIT_MAX} are clamped to {LIMIT_MAX}.",
                            LIMIT_DEFAULT,
                            1,
                            INTEGER_MAX,
                        ),
                        _int_param("page", "Page number, from 1.", 1, 1, INTEGER_MAX),
                        {
                            **_CURSOR_PARAM,
                            "description": (
                                "Cursor mode (not with `page`): `cursor=` starts at the newest "
                                "buyer, then pass each page's `cursor`."
                            ),
                        },
                    ],
                    "responses": {
                        "200": _success(
                            "A page of buyers",
                            {"oneOf": [_ref("BuyersPage"), _ref("BuyersWalk")]},
                        ),
                        **_errors(
                            2,
                            5,
                            7,
                            8,
                            12,
                            13,
                            15,
                            arguments="package, limit, page, or a free package",
                        ),
                    },
                }
            },
            **_seller_paths(),
        },
        "components": {
            "schemas": _schemas(),
            "securitySchemes": {
                "secretKey": {
                    "type": "apiKey",
                    "in": "query",
                    "name": "secret_key",
                    "description": "The application's secret key, as the spec passes it.",
                },
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The same key in `Authorization: Bearer <key>`, kept out of access logs.",
                },
            },
        },
    }
