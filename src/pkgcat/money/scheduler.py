"""The payout scheduler: fees asked again, sales released, payouts made and sent.

One run (:meth:`Scheduler.run_once`) does each step once; ``pkgcat money run`` is one run,
and each server worker of a store with a platform runs one every
``PKGCAT_PAYOUT_INTERVAL`` seconds (``PKGCAT_PAYOUT_SCHEDULER=server``). Any number of
them may run at once on any number of hosts: every step is claimed in the database
(:mod:`pkgcat.storage.ledger`, :mod:`pkgcat.storage.payouts`), and every call to the
platform carries an idempotency key made from the ledger's own id.
"""

from __future__ import annotations

import logging
import os
import random
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlalchemy import Engine

from pkgcat.config import Settings
from pkgcat.money.platform import MoneyPlatform, Order, TestMoney
from pkgcat.money.schedule import Schedule, utc_day
from pkgcat.storage import ledger, payouts, refunds
from pkgcat.storage import money as terms

log = logging.getLogger("pkgcat.money")
LEASE_SECONDS = 300
"""How long a scheduler holds a payout it sends; one killed mid-send is replaced after it."""
SEND_BATCH = 20


@dataclass(frozen=True, slots=True)
class Run:
    """What one run did."""

    fees: int = 0
    released: int = 0
    made: int = 0
    sent: int = 0
    failed: int = 0
    reversed: int = 0
    refunds: int = 0


def platforms_for(settings: Settings) -> dict[bool, MoneyPlatform | None]:
    """Who pays out test money (test mode, always) and live money (the live platform)."""
    from pkgcat.store.platforms import money_platform_for

    live = money_platform_for(settings) if settings.store_platform == "stripe" else None
    return {True: TestMoney(), False: live}


class Scheduler:
    def __init__(
        self,
        schedule: Schedule,
        engine: Engine,
        platforms: Mapping[bool, MoneyPlatform | None],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.schedule = schedule
        self._engine = engine
        self._platforms = platforms
        self._clock = clock
        self.owner = f"{socket.gethostname()[:20]}-{os.getpid()}-{secrets.token_hex(3)}"

    def run_once(self) -> Run:
        now = int(self._clock())
        fees = self._fees(now)
        released = ledger.release_due(self._engine, now)
        made = self._make(now)
        sent, failed = self._send(now)
        return Run(fees, released, made, sent, failed, self._reverse(now), self._refunds(now))

    def _fees(self, now: int) -> int:
        """Ask the platform again for the fees it could not tell at the sale."""
        live = self._platforms.get(False)
        told = 0
        for txn_id, currency in ledger.fees_wanted(self._engine) if live else ():
            assert live is not None
            fee = live.fee(txn_id, currency)
            if fee is not None:
                with self._engine.begin() as db:
                    told += ledger.record_fee(db, txn_id, fee, now)
        return told

    def _make(self, now: int) -> int:
        period = self.schedule.period(utc_day(now)).isoformat()
        made = 0
        with self._engine.connect() as db:
            accounts = terms.accounts(db)
        for owed in payouts.unpaid(self._engine):
            account = accounts.get(owed.source_id)
            if self._platforms.get(owed.test) is None or account is None:
                continue  # no one to pay it through, or no one to pay it to: it waits
            if account.test != owed.test or not (owed.test or account.payouts_enabled):
                continue
            if payouts.made_for(self._engine, owed.source_id, owed.currency, owed.test, period):
                continue
            with self._engine.connect() as db:
                threshold = terms.thresholds(db, owed.source_id).get(owed.currency)
            minimum = self.schedule.minimum(owed.currency, threshold)
            if owed.amount < minimum:
                continue
            payout = payouts.make(
                self._engine, source_id=owed.source_id, currency=owed.currency,
                test=owed.test, period=period, minimum=minimum,
                account_id=account.account_id, now=now,
            )  # fmt: skip
            made += payout is not None
        return made

    def _send(self, now: int) -> tuple[int, int]:
        sent = failed = 0
        claimed = payouts.claim(
            self._engine, self.owner, now=now, lease=LEASE_SECONDS, limit=SEND_BATCH
        )
        for payout in claimed:
            platform = self._platforms.get(payout.test)
            if platform is None:
                payouts.let_go(self._engine, payout.id, self.owner, "no platform to pay it", now)
                continue
            order = Order(payout.id, payout.account_id, payout.amount, payout.currency)
            step = None
            if payout.transfer_id is None:
                step = platform.transfer(order)
                if step.state == "done":
                    assert step.id is not None
                    payouts.transferred(self._engine, payout.id, self.owner, step.id, now)
            if step is None or step.state == "done":
                step = platform.pay_out(order)
            if step.state == "retry":
                payouts.let_go(self._engine, payout.id, self.owner, step.message, now)
            elif step.state == "refused":
                with self._engine.begin() as db:
                    failed += payouts.fail(
                        db, payout.id, code=step.code, message=step.message, now=now
                    )
                log.warning("payout %s failed: %s", payout.id, step.message)
            else:
                assert step.id is not None
                sent += payouts.sent(
                    self._engine, payout.id, self.owner,
                    platform_payout_id=step.id, paid=step.settled, now=now,
                )  # fmt: skip
        return sent, failed

    def _reverse(self, now: int) -> int:
        """Take back the transfers of failed payouts: the ledger owes their amount again."""
        done = 0
        for payout in payouts.to_reverse(self._engine):
            platform = self._platforms.get(payout.test)
            if platform is None or payout.transfer_id is None:
                continue
            step = platform.reverse(payout.id, payout.transfer_id, payout.amount)
            if step.state == "retry":
                continue
            if step.state == "refused":
                # Not tried again: the operator settles it with the platform (logged).
                log.error(
                    "the transfer of failed payout %s could not be reversed: %s",
                    payout.id,
                    step.message,
                )
            payouts.reversed_(self._engine, payout.id, step.id or f"refused: {step.message}", now)
            done += step.state == "done"
        return done

    def _refunds(self, now: int) -> int:
        """Finish refunds whose request to the platform was cut short (same idempotency key)."""
        done = 0
        for refund in refunds.stale(self._engine, before=now - 60):
            platform = self._platforms.get(refund.platform == "test")
            if platform is None or platform.name != refund.platform:
                continue
            step = platform.refund(refund.txn_id, refund.amount, refund.currency, refund.id)
            if step.state == "done":
                assert step.id is not None
                refunds.succeed(self._engine, refund.id, step.id, now)
                done += 1
            elif step.state == "refused":
                refunds.fail(self._engine, refund.id, step.message, now)
        return done


class InProcess:
    """The scheduler of a server's worker: its own engine and thread, started with the app."""

    def __init__(self, settings: Settings) -> None:
        from pkgcat.storage.engine import engine_for

        self._engine = engine_for(settings.database_url)  # connects on first use, in the thread
        self._scheduler = Scheduler(Schedule.of(settings), self._engine, platforms_for(settings))
        self._interval = settings.payout_interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="pkgcat-payouts", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        # Workers started together do not all run at once: each waits a share of the interval.
        wait = random.uniform(0, min(self._interval, 30.0))  # noqa: S311 - a spread, not a secret
        while not self._stop.wait(wait):
            try:
                self._scheduler.run_once()
            except Exception:  # one failed run (the database away) must not end the loop
                log.exception("a run of the payout scheduler failed; the next one follows")
            wait = self._interval

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._engine.dispose()
