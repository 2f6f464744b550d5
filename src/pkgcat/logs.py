"""Logging: one set-up for the server, its workers and the commands.

:func:`logging_config` turns the settings into a :func:`logging.config.dictConfig`
dictionary. The commands apply it with :func:`configure_logging`; ``pkgcat serve``
hands the same dictionary to granian, which applies it in the server process and
in each worker before the app is built, so granian's own lines (``_granian``) share
the format.

- ``PKGCAT_LOG_FORMAT=text`` (the default): one line per record, ``time level logger
  [request id] message``; ``json``: one JSON object per line (python-json-logger,
  serialized with orjson) with ``timestamp``, ``level``, ``logger``, ``message``,
  ``request_id`` within a request, and the access line's fields.
- ``PKGCAT_LOG_LEVEL`` is the level of pkgcat's and granian's loggers; other
  libraries log their warnings and errors.
- The access line (``pkgcat.access``, at INFO), one per request, is formatted by the
  app itself and written in batches by :mod:`pkgcat.access_log`, in the same two formats,
  without going through :mod:`logging`; ``PKGCAT_ACCESS_LOG=false`` turns it off, and so
  does a level above info. granian's own access log stays off: it would print the query,
  and the query can hold the key.

What comes from a request is escaped before it reaches a line (:func:`request_text`), and
a text line's message is made printable whatever it holds, its trace indented under it:
a line can never be forged by what a client sends (CR, LF, NUL and the like).

Two filters sit on the handler, so every record passes them whatever its logger:
:class:`RequestIdFilter` adds the request id of the request being served (a
context variable the ASGI app sets), and :class:`RedactingFilter` rewrites secret
keys, ``secret_key=`` values and ``Authorization`` values out of the message, its
arguments and any trace. The code never logs a key in the first place; the filter
is the safety net.
"""

from __future__ import annotations

import logging
import logging.config
import re
import sys
import time
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TextIO

from pkgcat.keys import DISPLAY_PREFIX_LENGTH, KEY_PREFIX, PUBLIC_PREFIX

if TYPE_CHECKING:
    from pkgcat.config import Settings

REQUEST_ID: ContextVar[str | None] = ContextVar("pkgcat_request_id", default=None)
"""The id of the request being served; each request runs in a context of its own."""

ACCESS_LOGGER = "pkgcat.access"

_REDACTED = "[redacted]"
_SUSPECTS = ("secret", "public_key", "authori", "bearer", KEY_PREFIX, PUBLIC_PREFIX)
"""What a text to redact holds, in lower case: a quick look before the rewrites below
(a few times faster than one case-insensitive regular expression)."""
_REWRITES = (
    # secret_key=..., secret_key%3D..., 'secret_key': '...', "secret_key": "...", and the
    # same of public_key (a public key is made to be seen, but it is spent by whoever has it)
    (
        re.compile(
            r"""((?:secret|public)_key['"]?\s*(?:=|%3d|:)\s*(?:b['"]|['"])?)[^&\s'",;)\]}]+""",
            re.IGNORECASE,
        ),
        rf"\1{_REDACTED}",
    ),
    # Authorization: <anything>, and header pairs such as (b'authorization', b'...')
    (
        re.compile(
            r"""(authori[sz]ation['"]?\s*[:=,]\s*(?:b['"]|['"])?)[^'"\r\n]+""", re.IGNORECASE
        ),
        rf"\1{_REDACTED}",
    ),
    (re.compile(r"(bearer\s+)[^\s'\",;)\[]+", re.IGNORECASE), rf"\1{_REDACTED}"),
    # A key anywhere else: keep its display prefix, which may be shown (keys.display_prefix).
    (
        re.compile(
            rf"((?:{KEY_PREFIX}|{PUBLIC_PREFIX})[0-9A-Za-z]{{{DISPLAY_PREFIX_LENGTH - len(KEY_PREFIX)}}})"
            "[0-9A-Za-z]+"
        ),
        rf"\1{_REDACTED}",
    ),
)


def redact(text: str) -> str:
    """``text`` without keys (secret or public), ``secret_key`` and ``public_key`` values and
    ``Authorization`` values."""
    lowered = text.lower()
    if not any(suspect in lowered for suspect in _SUSPECTS):
        return text
    for pattern, replacement in _REWRITES:
        text = pattern.sub(replacement, text)
    return text


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` with each character that is not printable written as an escape (``\\x0a``).

    Not printable (:meth:`str.isprintable`): control characters (CR, LF, NUL, ESC...),
    line and paragraph separators, and invisible format characters such as
    bidirectional overrides. What is left cannot end a log line or start another,
    nor move a terminal's cursor.
    """
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escape(char) for char in text)


def request_text(text: str, limit: int | None = None) -> str:
    """A value taken from a request (a path, a method, a header), as a log line holds it.

    Spaces, backslashes and every character that is not printable are written as
    escapes (``\\x20``, ``\\x5c``, ``\\x0a``, ``\\u2028``): the value stays one
    field of one line, and an escape in the log always stands for one character. Past
    ``limit`` characters it is cut, saying how many more there were. Keys are redacted.
    """
    if not text.isprintable() or " " in text or "\\" in text:
        text = "".join(
            char if char.isprintable() and char not in " \\" else _escape(char) for char in text
        )
    if limit is not None and len(text) > limit:
        text = f"{text[:limit]}...({len(text) - limit} more)"
    return redact(text)


_TRACES = logging.Formatter()


class RedactingFilter(logging.Filter):
    """Rewrites the record's message (with its arguments) and its trace through :func:`redact`."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info:
            # Formatted once here, redacted, and kept as the text formatters print.
            record.exc_text = redact(record.exc_text or _TRACES.formatException(record.exc_info))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` to a record logged while a request is being served."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = REQUEST_ID.get()
        if request_id is not None:
            record.request_id = request_id
        return True


class StderrHandler(logging.StreamHandler[TextIO]):
    """A stream handler that writes to ``sys.stderr`` as it is at each record.

    A progress display (rich's, in ``pkgcat import-repo``) replaces ``sys.stderr``
    while it is shown, and prints what is written there above itself.
    """

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        # No format here shows the caller's file and line, nor the thread or process:
        # records need not look them up (the logging HOWTO's "Optimization").
        logging._srcfile = None
        logging.logThreads = False
        logging.logProcesses = False
        logging.logMultiprocessing = False

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


class TextFormatter(logging.Formatter):
    """The human line: UTC time to the millisecond, level, logger, request id, message."""

    converter = time.gmtime  # type: ignore[assignment]  # (seconds) -> struct_time, as localtime
    default_time_format = "%Y-%m-%dT%H:%M:%S"
    default_msec_format = "%s.%03dZ"

    def __init__(self) -> None:
        super().__init__(
            "%(asctime)s %(levelname)-7s %(name)s [%(request_id)s] %(message)s",
            defaults={"request_id": "-"},
        )

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable(record.message)  # one line, whatever the message holds
        return super().formatMessage(record)

    def format(self, record: logging.LogRecord) -> str:
        """The record's line; a trace's lines follow it indented, their characters printable.

        Only a record's own line starts at the line's start: no text in a trace (an
        exception's message can hold a request's data) can pass for a record.
        """
        line, newline, trace = super().format(record).partition("\n")
        if not newline:
            return line
        return (
            line
            + "\n"
            + "\n".join(f"  {printable(part)}" if part else "" for part in trace.split("\n"))
        )


def json_formatter() -> logging.Formatter:
    """One JSON object per record: timestamp, level, logger, message, and every extra field."""
    from pythonjsonlogger.orjson import OrjsonFormatter

    return OrjsonFormatter(
        "%(levelname)s %(name)s %(message)s",
        rename_fields={"levelname": "level", "name": "logger"},
        timestamp=True,
    )


def logging_config(settings: Settings) -> dict[str, Any]:
    """The :func:`logging.config.dictConfig` of the settings' level, format and access log."""
    level = settings.log_level.upper()
    formatter: dict[str, Any] = (
        {"()": f"{__name__}.json_formatter"}
        if settings.log_format == "json"
        else {"()": f"{__name__}.TextFormatter"}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "request_id": {"()": f"{__name__}.RequestIdFilter"},
            "redact": {"()": f"{__name__}.RedactingFilter"},
        },
        "formatters": {"pkgcat": formatter},
        "handlers": {
            "stderr": {
                "()": f"{__name__}.StderrHandler",
                "formatter": "pkgcat",
                "filters": ["request_id", "redact"],
            }
        },
        "root": {"handlers": ["stderr"], "level": "ERROR" if level == "ERROR" else "WARNING"},
        "loggers": {
            "pkgcat": {"level": level},
            # granian's own loggers; it sets the level of _granian from the same setting.
            "_granian": {"level": level, "handlers": ["stderr"], "propagate": False},
            "granian.access": {"level": "CRITICAL", "handlers": ["stderr"], "propagate": False},
        },
    }


def configure_logging(settings: Settings) -> None:
    """Apply :func:`logging_config` to this process."""
    logging.config.dictConfig(logging_config(settings))
