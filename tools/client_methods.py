"""Writes ``src/pkgcat/client/_methods.py``: the methods of ``Client`` and ``AsyncClient``.

Each served operation of the table (:mod:`pkgcat.http.operations`) gets one method in each
client, written out twice by this module so that both have real signatures and docstrings
for their readers and their editors. The table gives the method's name, its path and HTTP
method, its parameters in order (their kinds, defaults and whether they are required) and
how the request carries them (the query, a JSON body of fields, a file); the descriptions
below give what the table cannot: the record the answer is read into, the docstring, where
the keyword-only parameters start, and the few places where the client differs (a default
it leaves to the server, a mode of the operation with its own return type). A walk
(``iter_...``) follows an operation's pages.

    make client-methods             # write the file again
    python -m tools.client_methods --check   # exit 1 when it differs (tests/test_client_methods.py)

The client imports nothing of the server: the table is read here, and what the client needs
of it is written into the generated module.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from pkgcat.client import _models, _money, _shapes, _webhooks
from pkgcat.http.openapi import served
from pkgcat.http.operations import BY_NAME, Operation, Parameter

TARGET = Path(__file__).resolve().parents[1] / "src" / "pkgcat" / "client" / "_methods.py"

_KINDS = {
    "integer": "int",
    "string": "str",
    "flag": "bool",
    "day": "date",
    "choice": "str",
    "cursor": "str",
    "list": "Sequence[str]",
}
"""A parameter's Python type by its kind in the table."""
_PAGING = ("limit", "page", "cursor")
"""What a walk sets itself, in place of its caller."""
_RUN = "RUN("
"""In a body: the client's driver (``self._run(``, or ``await self._run(``)."""


@dataclass(frozen=True)
class Method:
    """One operation's method, beside what the table says of it."""

    operation: str
    returns: str
    read: str
    """The reader of the answer: an expression of the generated module."""
    doc: str
    keyword_from: int | None = None
    """The first keyword-only parameter, by position (``None``: none is)."""
    types: Mapping[str, str] = field(default_factory=dict)
    """A parameter's type where its kind's is not the client's."""
    defaults: Mapping[str, str] = field(default_factory=dict)
    """A parameter's default where the table's is not the client's (``None``: the server's)."""
    body: str = ""
    """The body, where the plain request is not all (``RUN(`` stands for the driver)."""
    overloads: tuple[tuple[str, str], ...] = ()
    """Signatures (the parameters after ``self``) and return types of its overloads."""
    blocking: tuple[str, ...] = ()
    """Keyword-only parameters of ``Client``'s method alone, passed on to the core by name."""


@dataclass(frozen=True)
class Walk:
    """A walk over an operation's pages: its pages, or each item of them."""

    name: str
    method: Method
    yields: str
    doc: str
    items: str = ""
    """The pages' field whose items are yielded; empty: the pages are."""
    pages: str = ""
    """The core's walk, where it is not :meth:`Core.follow` of the operation."""


# --- the descriptions ------------------------------------------------------------------

USAGE = Method(
    "application/usage",
    "list[UsageDay]",
    "listed(UsageDay)",
    """Requests per day of the calling application, oldest first.

    The last ``days`` days and today (30 when nothing is given), or the days from
    ``start`` to ``end``; ``by="operation"`` splits each day by operation.""",
    keyword_from=1,
    types={"by": 'Literal["operation"]'},
    defaults={"days": "None"},
    # 30 days when nothing is given, sent last: what servers of the family answered by default.
    body="""
    params = given(days=days, start=start, end=end, by=by)
    if days is None and start is None and end is None:
        params["days"] = "30"
    return RUN(self._core.get(PATH, params, READ))""",
)
DETAILS = Method("package/details", "Package", "answer(Package)", "The record of one package.")
UPLOAD = Method(
    "package/upload",
    "Package",
    "answer(Package)",
    """Publish a .deb (a path, or its bytes) to the key's source; its details.

    Needs a key with the ``publish`` scope. Safe to retry: every attempt sends the
    same ``idempotency_key`` (a random one when not given). ``progress`` (``Client``
    only) is called with the size of each chunk as it is sent.""",
    blocking=("progress: Callable[[int], None] | None = None",),
)
BUYERS = Method(
    "package/buyers",
    "BuyersPage | BuyersCursorPage",
    "",
    """One page of the buyers of a paid package of the caller's source.

    A numbered page (``page``, 1 by default), or with ``cursor`` a page in cursor
    mode: ``cursor=""`` starts at the newest buyer.""",
    defaults={"page": "None"},
    overloads=(
        (
            "package_id: str, limit: int = 25, page: int | None = None, cursor: None = None",
            "BuyersPage",
        ),
        (
            "package_id: str, limit: int = 25, page: None = None, *, cursor: str",
            "BuyersCursorPage",
        ),
    ),
    body="""
    if cursor is None:
        params = given(package=package_id, limit=limit, page=page or 1)
        return RUN(self._core.get(PATH, params, answer(BuyersPage)))
    params = given(package=package_id, limit=limit, page=page, cursor=cursor)
    return RUN(self._core.get(PATH, params, answer(BuyersCursorPage)))""",
)
PACKAGES = Method(
    "source/packages",
    "PackagesPage",
    "answer(PackagesPage)",
    "One page of the caller's own packages, by identifier.",
    keyword_from=0,
)
CHECK = Method(
    "package/check",
    "Ownership",
    "answer(Ownership)",
    "Whether a buyer (by nickname or account) or a device (udid) owns a package.",
    keyword_from=1,
)
SALES = Method(
    "source/sales",
    "SalesPage",
    "answer(SalesPage)",
    "One page of the sales ledger, newest first, with the totals of the whole range.",
    keyword_from=0,
)
DOWNLOADS = Method(
    "package/downloads",
    "Downloads",
    "answer(Downloads)",
    """Whole downloads of one of the caller's packages per UTC day, and their total.

    The last ``days`` days and today (30 when nothing is given), or ``start`` to ``end``.""",
    keyword_from=2,
    defaults={"days": "None"},
)

BALANCE = Method(
    "source/balance",
    "list[Balance]",
    "read_balances",
    "The caller's source's balances per currency (test money apart) and next payouts.",
)
PAYOUTS = Method(
    "source/payouts",
    "PayoutsPage",
    "read_payouts",
    "One page of the caller's source's payouts, newest first, with the entries each paid.",
    keyword_from=0,
)


WHITELIST = Method(
    "package/whitelist",
    "WhitelistPage",
    "answer(WhitelistPage)",
    "One page of the devices on a package's whitelist, by udid (YouRepo's whitelist).",
    keyword_from=1,
)
WHITELIST_ADD = Method(
    "package/whitelist/add",
    "WhitelistChange",
    "answer(WhitelistChange)",
    """Put devices on a package's whitelist, each with ``description``.

    Needs a key with the ``whitelist`` scope. Idempotent, and safe to retry: every attempt
    sends the same ``idempotency_key`` (a random one when not given).""",
    keyword_from=2,
)
WHITELIST_REMOVE = Method(
    "package/whitelist/remove",
    "WhitelistChange",
    "answer(WhitelistChange)",
    """Take devices off a package's whitelist.

    Needs a key with the ``whitelist`` scope. Idempotent, and safe to retry as an add is.""",
    keyword_from=2,
)


def _hook(verb: str, returns: str, read: str, doc: str) -> Method:
    return Method(f"webhook/{verb}", returns, read, doc)


METHODS: tuple[Method | Walk, ...] = (
    USAGE,
    DETAILS,
    UPLOAD,
    BUYERS,
    Walk(
        "iter_buyers",
        BUYERS,
        "Buyer",
        "Every buyer, newest first, following cursors (page numbers on older servers).",
        items="buyers",
        pages="self._core.buyers_pages(PATH, package_id, page_size)",
    ),
    PACKAGES,
    Walk(
        "iter_packages",
        PACKAGES,
        "SourcePackage",
        "Every package of the caller's source, following cursors.",
        items="packages",
    ),
    CHECK,
    SALES,
    DOWNLOADS,
    Walk("sales_pages", SALES, "SalesPage", "Every page of the sales ledger, following cursors."),
    Walk(
        "iter_sales",
        SALES,
        "Sale",
        "Every sale of the range, newest first, following cursors.",
        items="sales",
    ),
    WHITELIST,
    WHITELIST_ADD,
    WHITELIST_REMOVE,
    _hook(
        "create",
        "WebhookSecret",
        "read_secret",
        """Add an endpoint to the key's application; the answer holds its signing secret,
    shown this once (keep it; it is not in the record's repr).""",
    ),
    _hook(
        "list",
        "list[WebhookEndpoint]",
        "read_endpoints",
        "The application's endpoints, oldest first; disabled ones say why.",
    ),
    _hook(
        "update",
        "WebhookEndpoint",
        "read_endpoint",
        "Change an endpoint's address, events or whether it is enabled.",
    ),
    _hook("delete", "str", "read_deleted", "Delete an endpoint and its delivery log; its id."),
    _hook(
        "roll-secret",
        "WebhookSecret",
        "read_secret",
        "A new signing secret, shown this once; the current one signs too for a while.",
    ),
    _hook(
        "redeliver",
        "WebhookAttempt",
        "read_attempt",
        "Send one stored event to the endpoint again, now; the attempt.",
    ),
    _hook(
        "test",
        "WebhookAttempt",
        "read_attempt",
        "Send a sample event (marked test) of ``event_type`` to the endpoint now.",
    ),
    _hook(
        "deliveries",
        "WebhookDeliveries",
        "read_deliveries",
        "A page of the endpoint's delivery log, newest first; pass ``cursor`` for the next.",
    ),
    BALANCE,
    PAYOUTS,
    Walk(
        "iter_payouts",
        PAYOUTS,
        "Payout",
        "Every payout of the caller's source, newest first, following cursors.",
        items="payouts",
    ),
    Method(
        "purchase/refund",
        "Refund",
        "read_refund",
        """Refund a store purchase of the key's source, whole or ``amount`` of it.

    Needs a key with the ``money`` scope. Safe to retry: every attempt sends the same
    ``idempotency_key`` (a random one when not given), and the refund is made once.""",
    ),
)


# --- writing them ------------------------------------------------------------------------


def python_name(parameter: Parameter) -> str:
    """``package`` is ``package_id`` in Python (``package`` is a method)."""
    return "package_id" if parameter.name == "package" else parameter.name


def _path_name(operation: Operation) -> str:
    return "_" + operation.name.upper().replace("/", "_").replace("-", "_")


def _path(operation: Operation) -> str:
    """The constant of an operation's path (named after the operation, which may say secret)."""
    constant = f'{_path_name(operation)} = "{operation.path}"'
    return constant + ("  # noqa: S105 - a path" if "SECRET" in constant else "")


@dataclass(frozen=True)
class _Written:
    """One parameter of a signature."""

    name: str
    annotation: str
    default: str | None

    def __str__(self) -> str:
        written = f"{self.name}: {self.annotation}"
        return written if self.default is None else f"{written} = {self.default}"


def _parameters(method: Method, operation: Operation) -> list[_Written]:
    written: list[_Written] = []
    for parameter in operation.served_parameters():
        annotation = method.types.get(parameter.name, _KINDS[parameter.kind])
        default: str | None = None
        if not parameter.required:
            default = method.defaults.get(parameter.name)
            if default is None:
                default = "None" if parameter.default is None else repr(parameter.default)
            if default == "None":
                annotation += " | None"
        written.append(_Written(python_name(parameter), annotation, default))
    if operation.writes:
        if not operation.fields:
            written.append(_Written("file", "str | os.PathLike[str] | bytes", None))
        written.append(_Written("idempotency_key", "str | None", "None"))
    return written


def _signature(parameters: list[_Written], keyword_from: int | None, extra: tuple[str, ...]) -> str:
    words = ["self"]
    for n, parameter in enumerate(parameters):
        if n == keyword_from:
            words.append("*")
        words.append(str(parameter))
    if extra:
        if keyword_from is None or keyword_from >= len(parameters):
            words.append("*")
        words.extend(extra)
    return ", ".join(words)


def _request(method: Method, operation: Operation, blocking: bool) -> str:
    """The plain body: the operation's one request, built from the parameters as given."""
    if operation.fields:
        pairs = []
        for parameter in operation.served_parameters():
            name = python_name(parameter)
            value = name
            if parameter.kind == "list":
                value = (
                    f"list({name})"
                    if parameter.required
                    else f"None if {name} is None else list({name})"
                )
            pairs.append(f'"{parameter.name}": {value}')
        fields = "{" + ", ".join(pairs) + "}"
        return f"return RUN(self._core.post_fields(PATH, {fields}, idempotency_key, READ))"
    if operation.writes:
        passed = "".join(f", {w.split(':')[0]}={w.split(':')[0]}" for w in method.blocking)
        media = operation.bodies[0]
        return (
            f'return RUN(self._core.post_file(PATH, "{media}", deb_bytes(file), '
            f"idempotency_key, READ{passed if blocking else ''}))"
        )
    return f"return RUN(self._core.get(PATH, {_given(operation, {})}, READ))"


def _given(operation: Operation, values: Mapping[str, str | None]) -> str:
    """The query's parameters, in the table's order: each as given in the method's parameter
    of its name, or as ``values`` says (``None``: left out)."""
    pairs = [
        f"{p.name}={values.get(p.name, python_name(p))}"
        for p in operation.served_parameters()
        if p.name not in values or values[p.name] is not None
    ]
    return f"given({', '.join(pairs)})"


def _docstring(doc: str) -> str:
    """The docstring of a method: its first line, and the others indented as the body."""
    first, _, rest = doc.partition("\n")
    if not rest:
        return f'        """{first}"""'
    rest = textwrap.indent(textwrap.dedent(rest), " " * 8)
    return f'        """{first}\n{rest}\n        """'


def _body(text: str, blocking: bool, path: str, read: str) -> str:
    run = "self._run(" if blocking else "await self._run("
    text = text.replace(_RUN, run).replace("PATH", path).replace("READ", read)
    return textwrap.indent(textwrap.dedent(text).strip("\n"), " " * 8)


def _method(method: Method, blocking: bool) -> str:
    operation = BY_NAME[method.operation]
    name = operation.client_name
    path = _path_name(operation)
    define = "def" if blocking else "async def"
    parts = []
    for overload_parameters, returns in method.overloads:
        parts.append(
            f"    @overload\n    {define} {name}(self, {overload_parameters}) -> {returns}: ..."
        )
    extra = method.blocking if blocking else ()
    signature = _signature(_parameters(method, operation), method.keyword_from, extra)
    body = method.body or _request(method, operation, blocking)
    parts.append(
        f"    {define} {name}({signature}) -> {method.returns}:\n"
        f"{_docstring(method.doc)}\n"
        f"{_body(body, blocking, path, method.read)}"
    )
    return "\n".join(parts)


def _walk(walk: Walk, blocking: bool) -> str:
    method = walk.method
    operation = BY_NAME[method.operation]
    path = _path_name(operation)
    parameters = [p for p in _parameters(method, operation) if p.name not in _PAGING]
    parameters.append(_Written("page_size", "int", "100"))
    signature = _signature(parameters, method.keyword_from, ())
    kind = "Iterator" if blocking else "AsyncIterator"
    pages = walk.pages or (
        "self._core.follow(lambda cursor: self._core.get(PATH, "
        f"{_given(operation, {'limit': 'page_size', 'page': None, 'cursor': 'cursor'})}, READ))"
    )
    pages = pages.replace("PATH", path).replace("READ", method.read)
    define = "def" if blocking or not walk.items else "async def"
    head = (
        f"    {define} {walk.name}({signature}) -> {kind}[{walk.yields}]:\n{_docstring(walk.doc)}\n"
    )
    if not walk.items:
        return head + f"        return self._pages({pages})"
    if blocking:
        return (
            head
            + f"        for page in self._pages({pages}):\n            yield from page.{walk.items}"
        )
    return (
        head
        + f"        async for page in self._pages({pages}):\n"
        + f"            for item in page.{walk.items}:\n                yield item"
    )


HEADER = '''\
# Generated by tools/client_methods.py (`make client-methods`) from the operation table,
# pkgcat.http.operations, and the client's descriptions in that tool: do not edit it.
# tests/test_client_methods.py fails while this file and the table disagree.
"""The operations' methods of ``Client`` and ``AsyncClient``, one per served operation of the
table with its parameters in the table's order, and the walks that follow their pages.

Each method builds its exchange with :class:`pkgcat.client._core.Core` and hands it to its
client's driver (``_run``): the two classes differ only in how the exchange is driven.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import date
from typing import Literal, overload

from pkgcat.client._core import Awaiting, Blocking, deb_bytes, given
'''


def _described() -> list[str]:
    """The served operations; each must have its method described above."""
    names = [m.operation for m in METHODS if isinstance(m, Method)]
    missing = [o.name for o in served() if o.name not in names]
    if missing:
        raise LookupError(f"served operations without a client method described: {missing}")
    return names


def render() -> str:
    """The module's text, formatted as ``ruff format`` writes it."""
    names = _described()
    paths = "\n".join(_path(BY_NAME[name]) for name in names)
    classes = []
    for blocking, (cls, base, doc) in zip(
        (True, False),
        (
            (
                "ClientMethods",
                "Blocking",
                "The operations of ``Client``: each returns its answer read.",
            ),
            (
                "AsyncClientMethods",
                "Awaiting",
                "The operations of ``AsyncClient``, as coroutines and async iterators.",
            ),
        ),
        strict=True,
    ):
        members = [
            _method(m, blocking) if isinstance(m, Method) else _walk(m, blocking) for m in METHODS
        ]
        classes.append(f'class {cls}({base}):\n    """{doc}"""\n\n' + "\n\n".join(members))
    body = paths + "\n\n\n" + "\n\n\n".join(classes) + "\n"
    text = HEADER + _imports() + "\n\n" + body
    return _formatted(text)


def _declared(module: ModuleType) -> set[str]:
    """The public names a module defines itself (not those it imports)."""
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {n for n in names if not n.startswith("_")}


def _imports() -> str:
    """The imports of the client's records and readers that the descriptions name."""
    code = [
        " ".join((m.returns, m.read, m.body, *(" ".join(o) for o in m.overloads)))
        if isinstance(m, Method)
        else f"{m.yields} {m.pages}"
        for m in METHODS
    ]
    named = set(re.findall(r"\b[A-Za-z_]\w*\b", " ".join(code)))
    lines = []
    for module in (_models, _money, _shapes, _webhooks):
        names = sorted(named & _declared(module))
        if names:
            lines.append(f"from {module.__name__} import {', '.join(names)}")
    return "\n".join(lines)


def _formatted(text: str) -> str:
    """``text`` with its imports sorted and formatted as ``make lint`` wants them."""
    for command in (("check", "--select", "I", "--fix-only"), ("format",)):
        text = subprocess.run(  # noqa: S603 - the project's own ruff, on the text written here
            [sys.executable, "-m", "ruff", *command, "--stdin-filename", str(TARGET), "-"],
            input=text,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return text


def main(argv: list[str]) -> int:
    text = render()
    if argv[1:] == ["--check"]:
        if TARGET.read_text() != text:
            print(f"{TARGET.name} differs from the table: run make client-methods", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
