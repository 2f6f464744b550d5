"""``pkgcat client money``: the key's source's balances, payouts and refunds, through the API.

``balance`` and ``payouts`` read with any key; ``refund`` needs the ``money`` scope and sends
one ``Idempotency-Key`` with all its attempts (``--idempotency-key``, else a random one per
run), so a retry refunds once.
"""

from __future__ import annotations

from typing import Annotated

import typer

from pkgcat.cli._tables import Column, print_rows
from pkgcat.cli.client_config import Cursor, Limit, Options, client_options
from pkgcat.cli.client_render import canonical, print_json

app = typer.Typer(
    help="Your source's money: balances, payouts, refunds (a refund needs the money scope).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

_options = client_options(without=("output_format", "as_csv"))
"""The shared options, but the output is a table or, with ``--json``, JSON."""

_BALANCE_COLUMNS = ("currency", "test", "pending", "available", "next payout", "amount", "why not")
_PAYOUT_COLUMNS = ("id", "period", "currency", "test", "amount", "status", "entries", "failure")


@app.command("balance")
@_options
def balance(*, options: Options) -> None:
    """Pending and available per currency, and the next payout (test money apart)."""
    with options.client() as client:
        found = client.balance()
    if options.output == "json":
        print_json(found)
        return
    rows = [
        [canonical(v) for v in (b.currency, b.test, b.pending, b.available,
                                b.next_payout.date, b.next_payout.amount, b.next_payout.blocked)]
        for b in found
    ]  # fmt: skip
    print_rows([Column(name) for name in _BALANCE_COLUMNS], rows)


@app.command("payouts")
@_options
def payouts(limit: Limit = None, cursor: Cursor = None, *, options: Options) -> None:
    """A page of your payouts, newest first (--cursor for the next)."""
    with options.client() as client:
        page = client.payouts(limit=limit or 25, cursor=cursor)
    if options.output == "json":
        print_json(page)
        return
    rows = [
        [canonical(v) for v in (p.id, p.period, p.currency, p.test, p.amount, p.status,
                                len(p.entries), p.failure_message)]
        for p in page.payouts
    ]  # fmt: skip
    print_rows([Column(name) for name in _PAYOUT_COLUMNS], rows)
    if page.cursor is not None:
        typer.echo(f"more follow: --cursor {page.cursor}", err=True)


@app.command("refund")
@_options
def refund(
    txn_id: Annotated[str, typer.Argument(metavar="TXN_ID", help="The store purchase's txn_id.")],
    amount: Annotated[
        str | None, typer.Option("--amount", help="Refund this much of it (default: all left).")
    ] = None,
    idempotency_key: Annotated[
        str | None,
        typer.Option(
            "--idempotency-key",
            help="Sent with every attempt, so that a retry refunds once "
            "(default: a random one per run).",
        ),
    ] = None,
    *,
    options: Options,
) -> None:
    """Refund a store purchase of your source through the payment platform, whole or in part."""
    with options.client() as client:
        made = client.refund(txn_id, amount, idempotency_key)
    if options.output == "json":
        print_json(made)
        return
    names = ("id", "txn_id", "amount", "currency", "status", "test", "platform_refund_id")
    print_rows([Column(n) for n in names], [[canonical(getattr(made, n)) for n in names]])
