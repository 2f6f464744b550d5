"""What the client tests share: recorded bodies, a scripted server double, our server in-process.

``recorded/`` holds bodies captured from ``pkgcat serve`` over the demo catalogue
(``havoc-dashboard`` in shape A, ``havoc-legacy`` in shape B, ``nebula-paris`` in
shape A in Europe/Paris). They carry the spec's observed quirks as they come off
the wire: the shape-B string usage, ``DD-MM-YYYY`` dates, http addresses, the
missing A-only fields, numbers as strings. The bodies of the API 1.1 operations
(``packages_*``, ``check_*``, ``sales_a``, ``usage_operations_a``, ``buyers_cursor_a``)
are written to the contract of docs/api.md, with values of the demo catalogue; the live
tests hold the client to the server itself.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner, Result

from pkgcat.cli import app as cli
from pkgcat.client import Client
from tests.conftest import AppFactory

RECORDED = Path(__file__).with_name("recorded")
BASE = "http://catalogue.test"
KEY = "pkc_" + "k" * 40


def recorded(name: str) -> dict[str, Any]:
    """A fresh copy of a recorded body (tests may change it)."""
    body: dict[str, Any] = json.loads((RECORDED / f"{name}.json").read_text())
    return copy.deepcopy(body)


def answer(
    code: int = 0,
    response: Any = None,
    *,
    status: int | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """An envelope answer; the status follows our server's table unless given."""
    statuses = {0: 200, 1: 404, 2: 400, 5: 401, 6: 404, 7: 405, 8: 404, 12: 403, 13: 429, 15: 500}
    return httpx.Response(
        status if status is not None else statuses.get(code, 400),
        json={"code": code, "response": response},
        headers=headers,
    )


Script = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


class Double:
    """A server double on httpx's mock transport: answers from a script, keeps the requests.

    A script entry is a response, an exception to raise (a transport error), or
    a function of the request. The last entry repeats once the script runs out.
    """

    def __init__(self, *script: Script) -> None:
        self.script = list(script)
        self.requests: list[httpx.Request] = []
        self.transport = httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, Exception):
            raise step
        if isinstance(step, httpx.Response):
            return step
        return step(request)


class Waits(list[float]):
    """Records the retry waits instead of sleeping them."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def waits() -> Waits:
    return Waits()


class InProcess(httpx.BaseTransport):
    """Carries the client's requests to our app through Starlette's test client."""

    def __init__(self, http: TestClient) -> None:
        self.http = http

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        reply = self.http.request(
            request.method, str(request.url), headers=request.headers, content=request.read()
        )
        return httpx.Response(reply.status_code, headers=reply.headers, content=reply.content)


Connect = Callable[..., Client]


@pytest.fixture
def connect(make_api: AppFactory, waits: Waits) -> Iterator[Connect]:
    """``connect(app, settings={...}, **client_options)``: a Client of our app, in-process.

    ``app`` names an application of the ``catalogue`` fixture, or is a key itself.
    """
    clients: list[Client] = []

    def build(app: str, *, settings: dict[str, Any] | None = None, **options: Any) -> Client:
        api = make_api(**(settings or {}))
        options.setdefault("sleep", waits)
        key = api.keys.get(app, app)
        client = Client(BASE, key, transport=InProcess(api.http), **options)
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.close()


# --- the command, in-process ------------------------------------------------------------------

Run = Callable[..., Result]

TERMINAL = {"TTY_COMPATIBLE": "1", "COLUMNS": "100"}
"""A terminal 100 columns wide, as rich sees it (CliRunner's output is not one)."""
NARROW = {"TTY_COMPATIBLE": "1", "COLUMNS": "40"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def invoke(
    transport: httpx.BaseTransport | None,
    key: str | None,
    *args: str,
    env: dict[str, str] | None = None,
) -> Result:
    variables = {"PKGCAT_BASE_URL": BASE, **(env or {})}
    if key is not None:
        variables["PKGCAT_SECRET_KEY"] = key
    return CliRunner().invoke(
        cli, ["client", *args], env=variables, obj=transport, catch_exceptions=False
    )


def shown(result: Result) -> str:
    """What a terminal shows of the output: the text without its colours."""
    assert result.exit_code == 0, result.output
    return ANSI.sub("", result.stdout)


@pytest.fixture
def run(make_api: AppFactory) -> Run:
    """``run(app, *args, settings={...}, env={...})``: the command against our app, as that application."""

    def go(
        app: str,
        *args: str,
        settings: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
    ) -> Result:
        api = make_api(**(settings or {}))
        return invoke(InProcess(api.http), api.keys.get(app, app), *args, env=env)

    return go
