"""A licence check's time against its answer: bought, whitelisted and unknown devices.

A device's check (pkgcat.licences) answers whether it owns a package; its time must tell no
more than its answer, so that nobody learns from it whether a device bought the package or is
on its whitelist, beyond what the answer says. Each check is one statement whatever it finds
(pkgcat.storage.licences); this measures, in one process and one run, the checks of a device
that bought the package, one on its whitelist and one unknown, with a public key and with a
secret key, each whole (admission: the key, its allowances, the durable count; then the
check) and the check alone, and reports each case's median over the bought device's::

    .venv/bin/python -m bench.licence                      # SQLite, 5 rounds of 400 checks each
    .venv/bin/python -m bench.licence --postgres postgresql://postgres@127.0.0.1:5432/test
    .venv/bin/python -m bench.licence --rounds 3 --checks 200

The catalogue: one source, 10,000 completed purchases of its paid package by buyers with a
device each, 1,000 devices on the package's whitelist. The cases are interleaved, so the
machine's noise falls on all of them alike: one call of each case in turn, in a new order each
time (the same from run to run), each case's median over all its calls.
Goal: every whole check within 10% of the bought device's, either way (0.91 to 1.10): the
check alone is shown beside, as where the rest of the difference lies.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url
from tests import factories as f

from bench.ratios import ratio_table
from pkgcat.config import Settings
from pkgcat.domain import Caller
from pkgcat.licences import LicenceService
from pkgcat.services import CatalogueService
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.backends import WriteEngine, open_public_limits, open_storage
from pkgcat.storage.migrate import upgrade
from pkgcat.storage.writes import whitelist

GOAL = 1.10
BUYERS = 10_000
WHITELISTED = 1_000
PACKAGE = "com.bench.paid"
DEVICES = {
    "bought": "00008030-00000000000013A7",  # buyer 5031's device
    "whitelisted": "fafefdfd00000000000000000000000000000257",  # the 600th on the list
    "unknown": "00008030-FFFFFFFFFFFFFFFF",
}
UNLIMITED = "1000000000/day"


def _device(n: int) -> str:
    return f"00008030-{n:016X}"


def catalogue(url: str) -> tuple[str, str]:
    """The catalogue above; a secret and a public key of its application."""
    upgrade(url)
    admin = CatalogueAdmin(url)
    try:
        issued = admin.load(
            sources=[f.source(1, "Bench")],
            applications=[f.application(1, 1, "tweak")],
            packages=[f.package(1, 1, PACKAGE, price="1.99")],
            purchases=[
                {"account": None, "udid": _device(n), "device_model": "iPhone12,1"}
                | f.purchase(1, 1, f.T0, nickname=f"buyer{n}", txn_id=f"BENCH-{n}")
                for n in range(BUYERS)
            ],
            devices=[
                {
                    "source_id": 1,
                    "nickname": f"buyer{n}",
                    "account": None,
                    "udid": _device(n),
                    "device_model": "iPhone12,1",
                }
                for n in range(BUYERS)
            ],
        )
        listed = [(f"fafefdfd{n:032x}", f"tester {n}") for n in range(WHITELISTED)]
        for start in range(0, WHITELISTED, 500):
            whitelist.add(admin.engine, 1, listed[start : start + 500], int(time.time()))
        public = admin.create_key("Bench", "tweak", kind="public").secret_key
    finally:
        admin.close()
    assert DEVICES["bought"] == _device(5031)
    assert DEVICES["whitelisted"] == listed[599][0]
    return issued[1].secret_key, public


Call = Callable[[], Awaitable[bool]]


async def measure(url: str, rounds: int, count: int) -> str:
    secret, public = catalogue(url)
    settings = Settings(
        database_url=url,
        rate_limit=UNLIMITED,
        public_key_limit=UNLIMITED,
        public_device_limit=UNLIMITED,
    )
    storage = open_storage(settings)
    storage.catalogue.start()
    limits = open_public_limits(settings)
    engine = WriteEngine(url)
    service = CatalogueService(
        storage.catalogue, storage.usage, storage.limiter, default_shape="A", default_timezone="UTC"
    )
    licences = LicenceService(service, storage.catalogue, limits, engine)
    try:
        cases: dict[str, tuple[str, Call, bool]] = {}
        for kind, key in (("public", public), ("secret", secret)):
            caller, _ = await licences.admit(key, DEVICES["unknown"])
            for answer, udid in DEVICES.items():

                async def whole(key: str = key, udid: str = udid) -> bool:
                    admitted, _ = await licences.admit(key, udid)
                    return (await licences.device_check(admitted, PACKAGE, udid)).owned

                async def alone(udid: str = udid, caller: Caller = caller) -> bool:
                    return (await licences.device_check(caller, PACKAGE, udid)).owned

                owned = answer != "unknown"
                cases[f"{kind} key, whole check, {answer}"] = (
                    f"{kind} key, whole check",
                    whole,
                    owned,
                )
                cases[f"{kind} key, check alone, {answer}"] = (
                    f"{kind} key, check alone",
                    alone,
                    owned,
                )
        samples: dict[str, list[float]] = {name: [] for name in cases}
        order = list(cases)
        shuffled = random.Random(44)  # the same order every run, a new one every round
        for _ in range(rounds):
            for _ in range(count):
                # One call of each case in turn: the machine's noise falls on all alike.
                shuffled.shuffle(order)
                for name in order:
                    _, call, owned = cases[name]
                    samples[name].append(await timed(call, owned))
    finally:
        await limits.close()
        await storage.close()
        engine.dispose()
    return report(cases, samples, rounds, count, url)


async def timed(call: Call, owned: bool) -> float:
    """Seconds one call took; it must answer ``owned``."""
    started = time.perf_counter()
    answer = await call()
    took = time.perf_counter() - started
    assert answer is owned
    return took


def report(
    cases: dict[str, tuple[str, Call, bool]],
    samples: dict[str, list[float]],
    rounds: int,
    count: int,
    url: str,
) -> str:
    backend = url.split(":", 1)[0]
    against = {
        name: None if name == f"{group}, bought" else f"{group}, bought"
        for name, (group, _, _) in cases.items()
    }
    lines, ratios = ratio_table(
        f"licence checks by answer, {backend}, {rounds} rounds x {count} checks",
        "check",
        samples,
        against,
    )
    # What a caller can time is the whole check; the check alone shows where it differs.
    whole = [ratio for name, ratio in ratios.items() if "whole" in name]
    worst = max(max(r, 1 / r) for r in whole)
    verdict = "met" if worst <= GOAL else "NOT met"
    lines.append(
        f"goal: every whole check within {GOAL - 1:.0%} of the bought device's, "
        f"either way: {verdict} (worst {worst:.2f})"
    )
    return "\n".join(lines)


def _postgres_database(base: str) -> tuple[str, Callable[[], None]]:
    """A database of its own on the server at ``base``, and how to drop it after."""
    name = f"pkgcat_bench_licence_{uuid.uuid4().hex[:8]}"
    server = make_url(base).set(drivername="postgresql")
    dsn = server.render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return server.set(database=name).render_as_string(hide_password=False), drop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--checks", type=int, default=400)
    parser.add_argument("--postgres", metavar="URL", help="also on this PostgreSQL server")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pkgcat-bench-licence-") as folder:
        url = f"sqlite:///{Path(folder) / 'licence.db'}"
        print(asyncio.run(measure(url, args.rounds, args.checks)))
    if args.postgres:
        url, drop = _postgres_database(args.postgres)
        try:
            print(asyncio.run(measure(url, args.rounds, args.checks)))
        finally:
            drop()


if __name__ == "__main__":
    os.environ.pop("PKGCAT_DATABASE_URL", None)
    main()
