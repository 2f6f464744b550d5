"""Where a ``pkgcat client`` command finds its server and key, and the options all commands share.

The server's address comes from ``--base-url``, else ``PKGCAT_BASE_URL``, else
``base_url`` in the user's config file (:func:`_config_file`), else
``http://127.0.0.1:8000``. The key comes from ``PKGCAT_SECRET_KEY``, else
``secret_key`` in the config file, never from the command line, where it would
land in shell history and process lists.

The options every command takes (the address, ``--tz``, ``--key-in``, ``--retries``
and the output: ``--format``, ``--json``, ``--csv``) are declared once, as the
parameters of :func:`_shared`; :func:`client_options` adds them to a command after
its own, so they are typed after the command's name and arguments as before, and
hands the command one :class:`Options`.

A failure is one line on stderr and an exit code (:data:`EXIT_CODES`, documented in
docs/client.md): 0 success, 1 unexpected failure (a bug, with its traceback), 2 usage
error, 3 authentication, 4 invalid argument, 5 not found, 6 permission denied,
7 rate limited, 8 server error, 9 protocol error, 10 connection error, 11 any other
API error.

A program that embeds the command can hand it an ``httpx.BaseTransport`` as the
Click context object (``CliRunner().invoke(app, args, obj=transport)``); the client
then talks through it instead of the network.
"""

from __future__ import annotations

import functools
import inspect
import os
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import httpx
import typer

from pkgcat.cli._safe import visible
from pkgcat.client import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    Client,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    PkgcatError,
    ProtocolError,
    RateLimitError,
    ServerError,
)

Output = Literal["table", "json", "csv"]

EXIT_USAGE = 2
EXIT_CODES: tuple[tuple[type[PkgcatError], int], ...] = (
    (AuthenticationError, 3),
    (InvalidArgumentError, 4),
    (NotFoundError, 5),
    (PermissionDeniedError, 6),
    (RateLimitError, 7),
    (ServerError, 8),
    (ProtocolError, 9),
    (APIConnectionError, 10),
    (APIError, 11),
)
"""Exit code per error class; the first class the error is an instance of wins."""

KEY_VARIABLE = "PKGCAT_SECRET_KEY"
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
"""The server ``pkgcat serve`` starts by default."""

BaseUrl = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        envvar="PKGCAT_BASE_URL",
        show_envvar=True,
        help="Address of the server [default: base_url in the config file, else http://127.0.0.1:8000].",
    ),
]
Zone = Annotated[
    str,
    typer.Option("--tz", help="IANA zone of dates the server sends without an offset (shape B)."),
]
KeyIn = Annotated[
    str,
    typer.Option(
        "--key-in", help="Send the key as a Bearer header, or as ?secret_key= for older servers."
    ),
]
Retries = Annotated[
    int,
    typer.Option("--retries", min=0, help="Retries after a 429, a 5xx or a failed connection."),
]
AsJson = Annotated[bool, typer.Option("--json", help="Short for --format json.")]
AsCsv = Annotated[bool, typer.Option("--csv", help="Short for --format csv.")]
Format = Annotated[
    str | None,
    typer.Option(
        "--format",
        metavar="table|json|csv",
        help="A table (plain lines off a terminal), the normalized result as JSON, or CSV rows.",
    ),
]
Limit = Annotated[
    int | None,
    typer.Option("--limit", help="Page size: 25 by default, 100 with --all (server max 100)."),
]
Cursor = Annotated[
    str | None,
    typer.Option(
        "--cursor", help="Continue a list where a page's cursor says (from --format json)."
    ),
]


def exit_code(error: PkgcatError) -> int:
    return next((code for kind, code in EXIT_CODES if isinstance(error, kind)), 1)


def fail(message: str, code: int) -> NoReturn:
    """One line on stderr, then exit with ``code``."""
    typer.echo(f"error: {visible(' '.join(message.split()))}", err=True)
    raise typer.Exit(code)


def _config_path() -> Path:
    from platformdirs import user_config_path

    return user_config_path("pkgcat", appauthor=False) / "config.toml"


def _config_file() -> dict[str, str]:
    """``base_url`` and ``secret_key`` from the user's config file, when there is one.

    Both are optional; the environment and ``--base-url`` win over the file. A
    file holding a key that other users can read is refused, as ssh refuses a
    private key others can read (on POSIX systems, where the mode says so).
    """
    path = _config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        fail(f"{path}: {error.strerror}", EXIT_USAGE)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        fail(f"{path}: not valid TOML: {error}", EXIT_USAGE)
    unknown = sorted(set(data) - {"base_url", "secret_key"})
    if unknown:
        fail(
            f"{path}: unknown setting {unknown[0]!r}; it may hold base_url and secret_key",
            EXIT_USAGE,
        )
    found: dict[str, str] = {}
    for name, value in data.items():
        if not isinstance(value, str) or not value.strip():
            fail(f"{path}: {name} must be a non-empty string", EXIT_USAGE)
        found[name] = value.strip()
    if "secret_key" in found and os.name == "posix" and path.stat().st_mode & 0o077:
        fail(
            f"{path} holds a secret key and others can read it; run: chmod 600 {path}",
            EXIT_USAGE,
        )
    return found


def _output(as_json: bool, as_csv: bool, given: str | None) -> Output:
    """The output asked for by ``--format``, ``--json`` or ``--csv`` (at most one of them)."""
    asked = [
        name for name, on in (("--format", given), ("--json", as_json), ("--csv", as_csv)) if on
    ]
    if len(asked) > 1:
        fail(f"{' and '.join(asked)}: choose one", EXIT_USAGE)
    if given is not None and given not in ("table", "json", "csv"):
        fail(f"--format: {given!r}; use table, json or csv", EXIT_USAGE)
    if as_json or given == "json":
        return "json"
    return "csv" if as_csv or given == "csv" else "table"


@dataclass(frozen=True, slots=True)
class Options:
    """The shared options of one run: the output asked for, and how to reach the server."""

    output: Output
    base_url: str | None
    tz: str
    key_in: str
    retries: int
    transport: httpx.BaseTransport | None

    @contextmanager
    def client(self) -> Iterator[Client]:
        """A client from the options and the environment; its errors become one line and a code."""
        config = _config_file()
        key = os.environ.get(KEY_VARIABLE, "").strip() or config.get("secret_key", "")
        if not key:
            fail(
                f"{KEY_VARIABLE} is not set (nor secret_key in {_config_path()}); "
                "export the application's secret key",
                EXIT_USAGE,
            )
        base_url = self.base_url or config.get("base_url") or DEFAULT_BASE_URL
        if self.key_in not in ("header", "query"):
            fail(f"--key-in: {self.key_in!r}; use header or query", EXIT_USAGE)
        try:
            zone = ZoneInfo(self.tz)
        except (ZoneInfoNotFoundError, ValueError):
            fail(f"--tz: {self.tz!r} is not an IANA time zone (e.g. UTC, Europe/Paris)", EXIT_USAGE)
        try:
            client = Client(
                base_url,
                key,
                transport=self.transport,
                key_in="query" if self.key_in == "query" else "header",
                tz=zone,
                max_retries=self.retries,
            )
        except ValueError as error:
            fail(str(error), EXIT_USAGE)
        try:
            with client:
                yield client
        except PkgcatError as error:
            fail(str(error), exit_code(error))


def _shared(
    ctx: typer.Context,
    base_url: BaseUrl = None,
    tz: Zone = "UTC",
    key_in: KeyIn = "header",
    retries: Retries = 3,
    output_format: Format = None,
    as_json: AsJson = False,
    as_csv: AsCsv = False,
) -> Options:
    """The options every command shares, declared once: Typer reads them from this signature."""
    transport = ctx.obj if isinstance(ctx.obj, httpx.BaseTransport) else None
    return Options(
        _output(as_json, as_csv, output_format), base_url, tz, key_in, retries, transport
    )


_SHARED = inspect.signature(_shared, eval_str=True).parameters

_Command = Callable[..., None]


def client_options(*, without: tuple[str, ...] = ()) -> Callable[[_Command], _Command]:
    """Give a command the shared options (but those named in ``without``), as ``options: Options``.

    The command declares a last parameter ``options: Options``; Typer sees the
    shared options in its place, after the command's own, and the command is
    called with them read into one :class:`Options`. An option left out takes
    its default (``without=("as_csv",)``: the command has no ``--csv``).
    """
    assert set(without) <= set(_SHARED) - {"ctx"}, without

    def decorate(command: _Command) -> _Command:
        own = inspect.signature(command, eval_str=True).parameters
        assert list(own)[-1] == "options", command.__name__
        assert "ctx" not in own, command.__name__
        shared = [p for name, p in _SHARED.items() if name not in without]
        parameters = [*list(own.values())[:-1], *(p.replace(kind=p.KEYWORD_ONLY) for p in shared)]

        @functools.wraps(command)
        def run(**given: Any) -> None:
            options = _shared(**{p.name: given.pop(p.name) for p in shared})
            command(**given, options=options)

        # What Typer reads to build the command (inspect.signature honours it); a function's
        # type does not declare the attribute.
        run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in parameters}
        return run

    return decorate
