"""``pkgcat money``: the sellers' money as the operator runs it.

Run the payout scheduler once, read a source's balances, payouts and ledger, adjust a
balance with a reason, set a source's commission or payout threshold, and make the link
a seller connects their payout account at.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Annotated

import typer

from pkgcat.cli import group
from pkgcat.cli._common import fail, load_settings, migrated, print_listing, stdout
from pkgcat.cli._tables import Column, when
from pkgcat.errors import InvalidArgument
from pkgcat.money.errors import MoneyError
from pkgcat.money.service import Money
from pkgcat.storage import money as terms
from pkgcat.storage.engine import engine_for

app = group("money")

SourceName = Annotated[str, typer.Argument(help="The source's name (pkgcat source list).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON.")]
Test = Annotated[bool, typer.Option("--test", help="The source's test money (test mode).")]


def _say(line: str) -> None:
    stdout.print(line, markup=False, highlight=False, soft_wrap=True)


@contextmanager
def _money() -> Iterator[tuple[Money, object]]:
    from pkgcat.store.platforms import money_platform_for

    settings = migrated(load_settings())
    engine = engine_for(settings.database_url)
    try:
        yield Money(settings, engine, money_platform_for(settings)), engine
    except InvalidArgument as error:
        fail(error.message)
    except MoneyError as error:
        fail(str(error))
    finally:
        engine.dispose()


def _source(engine: object, name: str) -> int:
    found = terms.source_id(engine, name)  # type: ignore[arg-type]  # the Engine yielded above
    if found is None:
        fail(f"no source named {name!r}")
    return found


@app.command("run")
def run() -> None:
    """Run the payout scheduler once: fees asked again, sales released, payouts made and sent.

    Safe beside the servers' own schedulers and other runs: each sale is released once and
    each payout made and sent once.
    """
    from pkgcat.money.scheduler import Scheduler, platforms_for

    settings = migrated(load_settings())
    engine = engine_for(settings.database_url)
    try:
        done = Scheduler(Money(settings, engine, None).schedule, engine,
                         platforms_for(settings)).run_once()  # fmt: skip
    finally:
        engine.dispose()
    _say(
        f"{done.released} sale(s) released, {done.fees} fee(s) told, {done.made} payout(s) "
        f"made, {done.sent} sent, {done.failed} failed, {done.reversed} transfer(s) reversed, "
        f"{done.refunds} refund(s) finished"
    )


@app.command("balance")
def balance(source: SourceName, as_json: AsJson = False) -> None:
    """A source's balances per currency: pending, available, and the next payout."""
    with _money() as (money, engine):
        found = money.balance(_source(engine, source))
    records = [
        {
            "currency": b.currency,
            "test": b.test,
            "pending": str(b.pending),
            "available": str(b.available),
            "next_payout_on": b.next_payout.on.isoformat(),
            "next_payout": str(b.next_payout.amount),
            "blocked": b.next_payout.blocked or "",
        }
        for b in found
    ]
    columns = ["currency", "test", "pending", "available", "next_payout_on", "next_payout",
               "blocked"]  # fmt: skip
    print_listing([Column(c) for c in columns], records, as_json)


@app.command("payouts")
def payouts_command(source: SourceName, as_json: AsJson = False) -> None:
    """A source's payouts, newest first (the latest 100)."""
    with _money() as (money, engine):
        page = money.payouts(_source(engine, source), limit=100)
    records = [
        {
            "id": p.id, "date": p.period.isoformat(), "currency": p.currency, "test": p.test,
            "amount": str(p.amount), "status": p.status, "entries": len(p.entries),
            "failure": p.failure_message or "", "created_at": when(p.created_at),
        }
        for p in page.payouts
    ]  # fmt: skip
    columns = [Column("id", kind="identifier"), Column("date"), Column("currency"),
               Column("test"), Column("amount"), Column("status"), Column("entries"),
               Column("failure"), Column("created_at", kind="time")]  # fmt: skip
    print_listing(columns, records, as_json)


@app.command("ledger")
def ledger_command(source: SourceName, as_json: AsJson = False) -> None:
    """Every entry of a source's ledger, oldest first."""
    with _money() as (money, engine):
        found = money.entries(_source(engine, source))
    records = [
        {
            "seq": e.seq, "kind": e.kind, "currency": e.currency, "test": e.test,
            "pending": str(e.pending), "available": str(e.available),
            "txn_id": e.txn_id or "", "reference": e.reference, "reason": e.reason or "",
            "created_at": when(e.created_at),
        }
        for e in found
    ]  # fmt: skip
    columns = [Column("seq"), Column("kind"), Column("currency"), Column("test"),
               Column("pending"), Column("available"), Column("txn_id", kind="identifier"),
               Column("reference", kind="identifier"), Column("reason"),
               Column("created_at", kind="time")]  # fmt: skip
    print_listing(columns, records, as_json)


@app.command("adjust")
def adjust(
    source: SourceName,
    amount: Annotated[str, typer.Argument(help="Added to the available balance (-5.00 takes).")],
    currency: Annotated[str, typer.Argument(help="ISO 4217 code (USD).")],
    reason: Annotated[str, typer.Option("--reason", help="Why, as the seller will read it.")],
    test: Test = False,
) -> None:
    """Adjust a source's available balance, with the reason the seller reads beside it."""
    with _money() as (money, engine):
        entry = money.adjust(_source(engine, source), currency, amount, reason, test=test)
    _say(f"{entry.available} {entry.currency} adjustment recorded for {source} ({entry.reference})")


@app.command("commission")
def commission(
    source: SourceName,
    percent: Annotated[
        str | None, typer.Argument(help="Percent of each sale's gross (12.5); none: see --default.")
    ] = None,
    default: Annotated[
        bool, typer.Option("--default", help="The deployment's rate (PKGCAT_COMMISSION_PERCENT).")
    ] = False,
) -> None:
    """Set a source's commission on its store sales from now on (sales made keep theirs)."""
    if (percent is None) == (not default):
        fail("give a percent, or --default for the deployment's rate")
    with _money() as (money, engine):
        money.set_commission(_source(engine, source), None if default else percent)
    shown = "the deployment's rate" if default else f"{Decimal(percent or 0)} %"
    _say(f"{source}'s commission is {shown} from now on")


@app.command("threshold")
def threshold(
    source: SourceName,
    amount: Annotated[str | None, typer.Argument(help="The least payout (50.00).")] = None,
    currency: Annotated[str, typer.Argument(help="ISO 4217 code.")] = "USD",
    remove: Annotated[bool, typer.Option("--remove", help="The deployment's minimum.")] = False,
) -> None:
    """Set a source's own least payout in a currency, above the deployment's minimum."""
    if (amount is None) == (not remove):
        fail("give an amount, or --remove for the deployment's minimum")
    with _money() as (money, engine):
        money.set_threshold(_source(engine, source), currency, None if remove else amount)
    _say(f"{source}'s payout threshold in {currency.upper()} is set")


@app.command("connect")
def connect(
    source: SourceName,
    return_url: Annotated[str, typer.Option("--return-url", help="Where onboarding returns.")],
    refresh_url: Annotated[str, typer.Option("--refresh-url", help="Where an expired link goes.")],
) -> None:
    """Make the link a seller connects their payout account at (Stripe's hosted onboarding);
    test mode connects a test account at once."""
    with _money() as (money, engine):
        made = money.connect(_source(engine, source), return_url, refresh_url)
    _say(f"account {made.account_id}{' (test)' if made.test else ''}: {made.url}")
    if made.expires_at is not None:
        _say(f"the link works until {when(made.expires_at)}; send it to the seller now")
