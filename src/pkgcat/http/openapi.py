"""The OpenAPI 3.1 document, generated from the operation table and the typed models.

Paths, parameters, tags, errors and headers come from :mod:`pkgcat.http.operations`
(served operations only); the schemas from :mod:`pkgcat.models` through
pydantic's ``TypeAdapter``. Each error response is the shared ``ErrorMessage``
with its own ``code`` constant, a form third-party generators read.
``tests/functional`` validates every response it receives against this document.
"""

from __future__ import annotations

import functools
from typing import Any

import orjson
from pydantic import TypeAdapter

from pkgcat import __version__
from pkgcat.domain import SHAPES
from pkgcat.errors import (
    ApiError,
    BodyTimedOut,
    DeadlineExceeded,
    InternalError,
    MethodNotAllowed,
    RateLimited,
    RequestInProgress,
    Unavailable,
)
from pkgcat.http.operations import DEB, DRM_PATH, FORM, OPERATIONS, Operation, Parameter
from pkgcat.http.routes import (
    LICENCE_ROUTES,
    MONEY_ROUTES,
    ROUTES,
    WEBHOOK_ROUTES,
    WRITE_ROUTES,
)
from pkgcat.models import DAY, ErrorMessage
from pkgcat.services import BLANK

Schema = dict[str, Any]

_REF = "#/components/schemas/{model}"
_OPEN = {"ErrorMessage"}
"""Models that the error responses extend with their ``code``: not closed."""

TAGS: dict[str, str] = {
    "application": "The calling application itself.",
    "package": "One package of the catalogue.",
    "source": "The caller's own source: its packages, its sales and its money.",
    "webhook": "The caller's application's webhook endpoints (a key of the webhooks scope).",
}


def served() -> list[Operation]:
    """The operations of the table that have a handler, in the table's order."""
    return [
        operation
        for operation in OPERATIONS
        if operation.path in ROUTES
        or operation.path in WRITE_ROUTES
        or operation.path in WEBHOOK_ROUTES
        or operation.path in MONEY_ROUTES
        or operation.path in LICENCE_ROUTES
    ]


def _tidy(schema: object, name: str | None = None) -> None:
    """Drop pydantic's generated titles and close every object (no other keys)."""
    if isinstance(schema, dict):
        if isinstance(schema.get("title"), str):
            del schema["title"]
        if schema.get("type") == "object" and "properties" in schema and name not in _OPEN:
            schema["additionalProperties"] = False
        for key, value in schema.items():
            if key == "properties":
                for field in value.values():
                    _tidy(field)
            elif key == "$defs":
                for model, definition in value.items():
                    _tidy(definition, model)
            else:
                _tidy(value)
    elif isinstance(schema, list):
        for item in schema:
            _tidy(item)


Keyed = dict[tuple[str, int, str], Schema]


def _models(operations: list[Operation], every: bool) -> tuple[Keyed, Schema]:
    """Each (operation, variant, shape)'s response schema (refs), and the component schemas."""
    inputs: list[tuple[tuple[str, int, str], Any, TypeAdapter[Any]]] = [
        ((operation.name, n, shape), "serialization", TypeAdapter(variant.models[shape]))
        for operation in operations
        for n, variant in enumerate(operation.responses)
        if every or variant.served
        for shape in SHAPES
    ]
    inputs.append((("error", 0, ""), "serialization", TypeAdapter(ErrorMessage)))
    found, definitions = TypeAdapter.json_schemas(inputs, ref_template=_REF)
    components: Schema = dict(definitions.get("$defs", {}))
    for name, definition in components.items():
        _tidy(definition, name)
    schemas: Keyed = {}
    for (key, _mode), schema in found.items():
        _tidy(schema)
        schemas[key] = schema
    return schemas, dict(sorted(components.items()))


def _response_schema(operation: Operation, schemas: Keyed, every: bool) -> Schema:
    """The 200 body's ``response``: one schema, or ``anyOf`` the distinct ones.

    ``anyOf``, not ``oneOf``: a body may fit two of them (an empty list of packages is
    as much shape A as shape B), and that is no error."""
    distinct: list[Schema] = []
    for n, variant in enumerate(operation.responses):
        for shape in SHAPES if every or variant.served else ():
            schema = schemas[(operation.name, n, shape)]
            if schema not in distinct:
                distinct.append(schema)
    return distinct[0] if len(distinct) == 1 else {"anyOf": distinct}


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
    "RateLimit-Policy": {
        "schema": {"type": "string", "pattern": r"^[0-9]+;w=[0-9]+$"},
        "required": True,
        "description": "The limit and its window in seconds: `3600;w=3600` is 3600 requests an hour.",
    },
} | _REQUEST_ID
_ETAG: dict[str, Schema] = {
    "ETag": {
        "schema": {"type": "string", "pattern": r'^"[0-9a-f]{32}"$'},
        "required": True,
        "description": (
            "Strong validator of the body. Sent back in If-None-Match, it is answered by "
            "304 Not Modified without a body (counted and rate-limited like any request)."
        ),
    }
}

_IF_NONE_MATCH: Schema = {
    "name": "If-None-Match",
    "in": "header",
    "required": False,
    "description": (
        "ETags of bodies the client holds (a list, or `*`): when one is the current body's, "
        "the answer is 304 Not Modified without a body."
    ),
    "schema": {"type": "string"},
}

_AUTHENTICATED_ERRORS = {2, 8, 9, 12, 13, 16}
"""Errors answered after the key was accepted: they carry the rate-limit headers."""
_MAYBE_AUTHENTICATED_ERRORS = {15}
"""Errors that carry the rate-limit headers when they come after the request was counted
(the operation failed), and not when the key check or the count itself failed."""


def _object(properties: dict[str, Schema], description: str) -> Schema:
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _success(operation: Operation, schema: Schema) -> Schema:
    return {
        "description": operation.summary,
        "headers": _RATE_HEADERS | (_ETAG if operation.etag else {}),
        "content": {
            "application/json": {
                "schema": _object(
                    {"code": {"type": "integer", "const": 0}, "response": schema},
                    "Success envelope.",
                )
            }
        },
    }


def _not_modified() -> Schema:
    """The 304 of an operation with an ``ETag``: no body, its headers as a 200's."""
    return {
        "description": (
            "Not Modified: an ETag of If-None-Match is the current body's. No body; "
            "counted and rate-limited like any request."
        ),
        "headers": _RATE_HEADERS | _ETAG,
    }


def _error(error: type[ApiError], description: str, method: str = "GET") -> Schema:
    counted = error.code in _AUTHENTICATED_ERRORS and error is not DeadlineExceeded
    headers = dict(_RATE_HEADERS if counted else _REQUEST_ID)
    if error.code in _MAYBE_AUTHENTICATED_ERRORS or error is DeadlineExceeded:
        headers |= {
            name: {**header, "required": False}
            for name, header in _RATE_HEADERS.items()
            if name.startswith("RateLimit-")
        }
    if issubclass(error, (RateLimited, RequestInProgress)) or error is Unavailable:
        headers["Retry-After"] = {**_HEADER, "description": "Seconds to wait."}
    if error is MethodNotAllowed:
        headers["Allow"] = {
            "schema": {"type": "string", "const": method},
            "required": True,
            "description": "The one method the operation takes.",
        }
    return {
        "description": f"code {error.code}: {description}",
        "headers": headers,
        "content": {
            "application/json": {
                "schema": {
                    "allOf": [
                        {"$ref": _REF.format(model="ErrorMessage")},
                        {
                            "type": "object",
                            "properties": {"code": {"type": "integer", "const": error.code}},
                            "required": ["code"],
                        },
                    ]
                }
            }
        },
    }


def _errors(operation: Operation) -> dict[str, Schema]:
    """The error responses of an operation, described by the error table itself."""
    errors: dict[str, Schema] = {}

    def add(error: type[ApiError], described: str) -> None:
        status = str(error.status)
        schema = _error(error, described, operation.method)
        if status in errors:  # two codes of one status (401: 4 and 5; 503: 15 and 16)
            schema = _either(errors[status], schema)
        errors[status] = schema

    for error in sorted(operation.errors, key=lambda e: e.code):
        if error is DeadlineExceeded:
            continue  # beside code 15's 503, below
        add(error, f"invalid {operation.invalid}" if error.code == 2 else error.when)
    if operation.method == "POST":  # code 2 is 408 when the body comes too slowly
        add(BodyTimedOut, BodyTimedOut.when)
    if InternalError in operation.errors:  # code 15 is 503 when the database is locked
        add(Unavailable, Unavailable.when)
    if DeadlineExceeded in operation.errors:  # code 16 is 503 at a read's deadline
        add(DeadlineExceeded, DeadlineExceeded.when)
    return errors


def _either(first: Schema, second: Schema) -> Schema:
    """One response of two codes answered with the same status: either code, each described."""
    codes = [*_codes(first), *_codes(second)]
    merged = {**first, "description": f"{first['description']}; {second['description']}"}
    # A header is required only where both codes carry it.
    headers = {**first["headers"], **second["headers"]}
    for name, header in headers.items():
        if not (first["headers"].get(name, {}).get("required") and
                second["headers"].get(name, {}).get("required")):  # fmt: skip
            headers[name] = {**header, "required": False}
    merged["headers"] = headers
    schema = merged["content"]["application/json"]["schema"]
    merged["content"] = {
        "application/json": {
            "schema": {
                "allOf": [
                    schema["allOf"][0],
                    {
                        "type": "object",
                        "properties": {"code": {"type": "integer", "enum": sorted(set(codes))}},
                        "required": ["code"],
                    },
                ]
            }
        }
    }
    return merged


def _codes(schema: Schema) -> list[int]:
    code = schema["content"]["application/json"]["schema"]["allOf"][1]["properties"]["code"]
    return [code["const"]] if "const" in code else list(code["enum"])


_BLANK_CLASS = "".join(f"\\x{ord(c):02x}" for c in BLANK)


def parameter_schema(parameter: Parameter) -> Schema:
    """A parameter's JSON Schema, as the document states it."""
    schema: Schema
    if parameter.kind == "integer":
        schema = {"type": "integer", "default": parameter.default}
        if parameter.minimum is not None:
            schema["minimum"] = parameter.minimum
        if parameter.maximum is not None:
            schema["maximum"] = parameter.maximum
    elif parameter.kind == "flag":
        schema = {"type": "integer", "enum": [0, 1], "minimum": 0, "maximum": 1}
    elif parameter.kind == "choice":
        schema = {"type": "string", "enum": list(parameter.choices)}
    elif parameter.kind == "day":
        # format: a generator types it as a date; the pattern keeps the four-digit year.
        schema = {"type": "string", "format": "date", "pattern": DAY}
    elif parameter.kind == "list":
        items: Schema = {"type": "string"}
        if parameter.choices:
            items["enum"] = list(parameter.choices)
        schema = {"type": "array", "items": items, "minItems": 1, "uniqueItems": True}
    elif parameter.kind == "cursor":
        schema = {"type": "string", "maxLength": 512}
    elif parameter.required:
        schema = {"type": "string", "minLength": 1, "pattern": f"[^{_BLANK_CLASS}]"}
    else:
        schema = {"type": "string"}
    return schema


def _parameter(parameter: Parameter) -> Schema:
    declared: Schema = {
        "name": parameter.name,
        "in": "query",
        "required": parameter.required,
        "description": parameter.doc,
        "schema": parameter_schema(parameter),
    }
    if parameter.example is not None:
        declared["example"] = parameter.example
    return declared


def _operation(operation: Operation, schemas: Keyed, every: bool) -> Schema:
    response = _response_schema(operation, schemas, every)
    responses: Schema = {"200": _success(operation, response)}
    if operation.etag:
        responses["304"] = _not_modified()
    parameters = operation.parameters if every else operation.served_parameters()
    responses |= _errors(operation)
    declared = [] if operation.fields else [_parameter(p) for p in parameters]
    if operation.etag:
        declared.append(_IF_NONE_MATCH)
    described: Schema = {
        "operationId": operation.operation_id,
        "tags": [operation.tag],
        "summary": operation.summary,
        "description": operation.doc,
        "parameters": declared,
        "responses": responses,
    }
    if operation.public:  # a public key too, in its own parameter or the Bearer header
        described["security"] = [{"secretKey": []}, {"publicKey": []}, {"bearer": []}]
    if operation.writes:
        declared.append(_IDEMPOTENCY_KEY)
        described["requestBody"] = (
            _fields_body(operation, parameters) if operation.fields else _request_body(operation)
        )
        described["x-scope"] = operation.scope
    return {operation.method.lower(): described}


_IDEMPOTENCY_KEY: Schema = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": (
        "Makes the write safe to retry: the key is claimed before the work, and the same "
        "key with the same body gets the first answer again (a success or a refusal of the "
        "request), without a second write; while the first is still in progress, code 16 "
        "(409) with Retry-After; with another body, code 2. Kept for "
        "`PKGCAT_IDEMPOTENCY_SECONDS` (a day by default)."
    ),
    "schema": {"type": "string", "pattern": "^[\\x21-\\x7e]{1,255}$"},
}


def _fields_body(operation: Operation, parameters: tuple[Parameter, ...]) -> Schema:
    """A write of fields: one JSON object, or the same fields form-encoded."""
    properties = {}
    for parameter in parameters:
        schema = parameter_schema(parameter)
        if parameter.kind == "flag":  # a JSON body may say it as a boolean too
            schema = {"oneOf": [{"type": "boolean"}, schema]}
        properties[parameter.name] = {**schema, "description": parameter.doc}
    fields: Schema = {
        "type": "object",
        "properties": properties,
        "required": [p.name for p in parameters if p.required],
    }
    return {
        "required": True,
        "description": "The operation's fields.",
        "content": {media: {"schema": fields} for media in operation.bodies},
    }


def _request_body(operation: Operation) -> Schema:
    """A write's body: the file itself, or a multipart form with it in ``file``."""
    # contentMediaType is OpenAPI 3.1's word for it; format binary, the 3.0 one generators read.
    binary: Schema = {"type": "string", "format": "binary", "contentMediaType": DEB}
    content: Schema = {}
    for media in operation.bodies:
        if media == FORM:
            content[media] = {
                "schema": {
                    "type": "object",
                    "properties": {"file": binary},
                    "required": ["file"],
                },
                "encoding": {"file": {"contentType": DEB}},
            }
        else:
            content[media] = {"schema": binary}
    return {"required": True, "description": "The .deb file.", "content": content}


_DRM_STATUSES = (400, 401, 403, 404, 405, 429, 500, 503)
"""What a DRM check answers besides 200: the status of the API's error (docs/api.md)."""


def _drm_path() -> dict[str, Schema]:
    """The Packix/Havoc DRM check (:mod:`pkgcat.http.licences`): not an operation of the table,
    whose paths are ``/1.0/<name>.json`` and whose answers are the envelope; declared here so
    that the document holds every path the API answers."""
    user = {
        "type": "object",
        "properties": {
            "udid": {"type": "string", "pattern": "^[A-Za-z0-9-]{1,64}$"},
            "model": {"type": "string", "pattern": "^[\\x20-\\x7e]{1,64}$"},
            "identifier": {"type": "string", "minLength": 1, "pattern": f"[^{_BLANK_CLASS}]"},
            "token": {"type": "string"},
        },
        "required": ["udid", "identifier"],
        "description": "The device, its model, the package (identifier) and the token (a key).",
    }
    error = {
        "type": "object",
        "properties": {
            "status": {"const": "error"},
            "code": {"type": "integer", "description": "The API's error code."},
            "message": {"type": "string"},
        },
        "required": ["status", "code", "message"],
        "additionalProperties": False,
    }
    refused = {
        str(status): {
            "description": "Not a check: the API's error, by its code.",
            "headers": dict(_REQUEST_ID),
            "content": {"application/json": {"schema": error}},
        }
        for status in _DRM_STATUSES
    }
    answered = {
        "type": "object",
        "properties": {"status": {"enum": ["completed", "failed"]}},
        "required": ["status"],
        "additionalProperties": False,
    }
    return {
        DRM_PATH: {
            "post": {
                "operationId": "drm_check",
                "tags": ["package"],
                "summary": "The Packix/Havoc DRM check: does a device own a package?",
                "description": "Packix's request at Packix's path, so that a seller's middleman "
                "changes only its base address. `completed`: owned (bought, or on the "
                "package's whitelist); `failed`: not owned. The token is any key of the "
                "package's source, in the body, a `token` header or `Authorization`.",
                "security": [],
                "parameters": [
                    {
                        "name": "token",
                        "in": "header",
                        "required": False,
                        "description": "The token, when the body has none.",
                        "schema": {"type": "string"},
                    }
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"user": user},
                                "required": ["user"],
                            }
                        }
                    },
                },
                "responses": {
                    "200": {
                        "description": "The device owns the package, or not.",
                        "headers": dict(_REQUEST_ID),
                        "content": {"application/json": {"schema": answered}},
                    },
                    **refused,
                },
            }
        }
    }


def openapi_document(*, every: bool = False) -> dict[str, Any]:
    """The whole document, as served at ``/openapi.json``: a copy of the caller's own.

    ``every``: of every operation, parameter and response the table declares, served
    or not (what the document will be once they all are; the tests check it)."""
    document: dict[str, Any] = orjson.loads(openapi_json(every=every))
    return document


@functools.cache
def openapi_json(*, every: bool = False) -> bytes:
    """The document as served, built once a process: the operation table and the models
    do not change while it runs, and each app made would otherwise spend 0.1 s on it."""
    return orjson.dumps(_document(every))


def _document(every: bool) -> dict[str, Any]:
    operations = list(OPERATIONS) if every else served()
    schemas, components = _models(operations, every)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Package Catalogue API",
            "version": __version__,
            "description": (
                "Daily API usage, package details and buyers of a paid package, for the "
                "developers who sell in an APT package catalogue, and the upload of their "
                ".deb files (POST, with a key of the publish scope). Every response is "
                '`{"code": 0, "response": ...}`; errors carry a non-zero code and a message. '
                "Two response shapes exist (A and B, see each schema); a client must accept both. "
                "Paths outside these operations answer code 1 (unknown endpoint under /1.0/) "
                "or code 6 (unknown API version), both with HTTP 404."
            ),
        },
        "servers": [{"url": "/"}],
        "security": [{"secretKey": []}, {"bearer": []}],
        "tags": [
            {"name": tag, "description": text}
            for tag, text in TAGS.items()
            if any(o.tag == tag for o in operations)
        ],
        "paths": {o.path: _operation(o, schemas, every) for o in operations} | _drm_path(),
        "components": {
            "schemas": components,
            "securitySchemes": {
                "secretKey": {
                    "type": "apiKey",
                    "in": "query",
                    "name": "secret_key",
                    "description": "The application's secret key, as the spec passes it.",
                },
                "publicKey": {
                    "type": "apiKey",
                    "in": "query",
                    "name": "public_key",
                    "description": "A public key (`pkp_...`), which may only check a device's "
                    "licence (package/check with udid).",
                },
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The same key in `Authorization: Bearer <key>`, kept out of access logs.",
                },
            },
        },
    }
