"""A large, seeded catalogue in a migrated SQLite file, for the load benchmark.

The schema comes from the project's migrations (``pkgcat.storage.migrate.upgrade``);
the rows go in with the stdlib ``sqlite3`` driver, one ``executemany`` per table in
one transaction each, which is what makes a million purchases take seconds. The
defaults are the issue's catalogue: 100,000 packages over 20 sources, 1,000,000
purchases of which 100,000 are of one paid package (the "hot" one), and 365 days
of usage for 1,000 applications, each with one secret key.

The keys are derived from the seed, so the plain keys are known: they are written
beside the database (``<name>.json``), with the ids the benchmark asks for. A
generated catalogue is cached under ``bench/.cache/``, keyed by its parameters,
the schema revision and the day its usage history ends::

    .venv/bin/python -m bench.catalogue                   # the full catalogue, prints its path
    .venv/bin/python -m bench.catalogue --packages 1000   # a smaller one
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sqlite3
import string
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
CACHE_DIR = BENCH_DIR / ".cache"
GENERATOR_VERSION = 2  # bump when the rows change, so cached files are rebuilt
SEED = 20251122
KEY_ALPHABET = string.digits + string.ascii_letters
PRICES = ["0.99", "1.49", "1.99", "2.49", "2.99", "3.99", "4.99", "9.99"]
SECTIONS = ["Tweaks", "Themes", "Utilities", "System", "Widgets", "Keyboards"]
ZONES = [None, None, None, "Europe/Paris", "America/New_York", "Asia/Tokyo"]
WORDS = ["velvet", "prism", "stash", "aurora", "quasar", "orbit", "lumen", "drift", "nova"]


@dataclass(frozen=True)
class Params:
    """What a catalogue is made of; every field is part of its cache key."""

    packages: int = 100_000
    sources: int = 20
    purchases: int = 1_000_000
    hot_buyers: int = 100_000
    applications: int = 1_000
    usage_days: int = 365
    seed: int = SEED

    def check(self) -> None:
        if self.sources < 2 or self.packages < 2 * self.sources:
            raise ValueError("need at least 2 sources and 2 packages per source")
        if not 0 < self.hot_buyers <= self.purchases:
            raise ValueError("hot buyers must be between 1 and the number of purchases")
        if self.applications < 1 or self.usage_days < 1:
            raise ValueError("need at least one application and one day of usage")


@dataclass(frozen=True)
class Catalogue:
    """A generated database and what the benchmark needs to know about it."""

    path: Path
    params: Params
    hot_package: str
    hot_key: str
    """The key of the first application, of the source that sells the hot package."""
    limited_key: str
    """The key of an application kept apart for the rate-limited measurement."""
    keys: list[str]
    """One key per application (the limited one excluded)."""
    today: str
    """The last day of the usage history (ISO), the day the catalogue was made for."""
    hot_buyer: str
    """The nickname of one buyer of the hot package, for the ownership check."""
    online_packages: list[str]
    """A seeded sample of online package ids, for the random-ids rotation."""

    @classmethod
    def load(cls, path: Path) -> Catalogue:
        meta: dict[str, Any] = json.loads(path.with_suffix(".json").read_text())
        return cls(
            path=path,
            params=Params(**meta["params"]),
            hot_package=meta["hot_package"],
            hot_key=meta["hot_key"],
            limited_key=meta["limited_key"],
            keys=meta["keys"],
            today=meta["today"],
            hot_buyer=meta["hot_buyer"],
            online_packages=meta["online_packages"],
        )


def _seeded_key(rng: random.Random) -> str:
    # Same form as pkgcat.keys.new_key, but from the seed: a benchmark key, not a secret.
    return "pkc_" + "".join(rng.choices(KEY_ALPHABET, k=40))


def _hex(rng: random.Random, digits: int) -> str:
    return f"{rng.getrandbits(digits * 4):0{digits}x}"


def _package_id(source: int, n: int) -> str:
    return f"com.source{source:02d}.{WORDS[n % len(WORDS)]}{n:07d}"


def _package_rows(p: Params, rng: random.Random, now: int) -> Iterator[tuple[Any, ...]]:
    compatible = json.dumps(["iOS 14", "iOS 15", "iOS 16"])
    for n in range(1, p.packages + 1):
        source = (n - 1) % p.sources + 1
        ident = _package_id(source, n)
        base = f"https://repo{source:02d}.example/"
        title = f"{WORDS[n % len(WORDS)].title()} {n}"
        section = SECTIONS[n % len(SECTIONS)]
        votes = rng.randint(0, 4000)
        price = "2.99" if n == 1 else rng.choice([None, None, "0.00", *PRICES])
        yield (
            n,
            ident,
            source,
            title,
            f"{rng.randint(1, 3)}.{rng.randint(0, 9)}.{rng.randint(0, 20)}",
            "iphoneos-arm64",
            f"Seller {source} <support@repo{source:02d}.example>",
            section,
            f"{title}: a {section.lower()} package for your device",
            f"{title} brings {section.lower()} to iOS 14 to 16.\n\nConfigure it from Settings.",
            "dpkg (>= 1.19.7)" if n % 4 == 0 else "",
            "firmware (>= 14.0), mobilesubstrate (>= 0.9.7000), preferenceloader",
            f"{ident}-legacy" if n % 3 == 0 else "",
            f"{ident}-legacy" if n % 3 == 0 else "",
            rng.randint(20_000, 4_000_000),
            _hex(rng, 32),
            _hex(rng, 64),
            compatible,
            rng.randint(votes * 5, votes * 60 + 5),
            votes,
            rng.randint(votes * 3, votes * 5),
            0 if n % 50 == 7 else 1,  # 2% offline, never the hot package (n=1)
            price,
            "USD",
            f"{base}icons/{ident}.png",
            json.dumps([f"{base}screenshots/{ident}/{k}.png" for k in (1, 2, 3)]),
            f"{base}depictions/{ident}/",
            now - rng.randint(1, 900) * 86400,
            now - 1000 * 86400,
            now - rng.randint(0, 60) * 86400,
            0,
        )


_INSERT_PACKAGE = (
    "INSERT INTO packages (id, package, source_id, name, version, architecture, author, "
    "section, description, long_description, pre_depends, depends, conflicts, replaces, size, "
    "md5sum, sha256, compatible, total_download, total_votes, total_value_votes, online, price, "
    "currency, icon, screenshots, url, released_at, created_at, updated_at, commercial) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


def _nickname(n: int) -> str:
    return f"{WORDS[n % len(WORDS)]}{WORDS[(n // 9) % len(WORDS)]}{n}"


def _purchase_rows(p: Params, rng: random.Random, now: int) -> Iterator[tuple[Any, ...]]:
    paid_other = [n for n in range(2, min(p.packages, 20_000) + 1) if (n - 1) % p.sources != 0]
    for n in range(1, p.purchases + 1):
        if n <= p.hot_buyers:
            source, package, scope, price = 1, 1, "package", "2.99"
        elif n % 10 == 0:  # a whole-source purchase, never of the hot package's source
            source, package, scope, price = rng.randint(2, p.sources), None, "source", "9.99"
        else:
            package = rng.choice(paid_other)
            source, scope, price = (package - 1) % p.sources + 1, "package", rng.choice(PRICES)
        nickname = _nickname(n)
        # The hot package's buyers bought it within the last year, so that one sales ledger
        # (at most 365 days) holds all of them; the others are spread over two years.
        age = rng.randint(0, (360 if n <= p.hot_buyers else 700) * 86400)
        commission = f"{float(price) * 0.15:.2f}"
        yield (
            n,
            source,
            package,
            scope,
            nickname,
            "Refunded" if n % 37 == 0 else "Completed",
            price,
            commission,
            "USD",
            now - age,
            f"{n:09d}{_hex(rng, 8).upper()}",
            f"https://forum.example/u/{nickname}",
            "paypal" if n % 3 else "stripe",
        )


def _write(path: Path, p: Params, today: date) -> dict[str, Any]:
    from pkgcat.keys import display_prefix, hash_key
    from pkgcat.storage.migrate import upgrade

    upgrade(f"sqlite:///{path}")
    rng = random.Random(p.seed)
    now = int(datetime.combine(today, datetime.min.time(), tzinfo=UTC).timestamp())
    db = sqlite3.connect(path, isolation_level=None)
    try:
        # A half-written file is thrown away, so the load needs no journal; WAL comes back last.
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute("PRAGMA cache_size=-262144")  # 256 MB: the indexes are built in memory

        def load(sql: str, rows: Any) -> None:
            db.execute("BEGIN")
            db.executemany(sql, rows)
            db.execute("COMMIT")

        load(
            "INSERT INTO sources (id, name, origin, url, created_at, label) VALUES (?,?,?,?,?,?)",
            (
                (s, f"Source {s:02d}", f"Seller {s}", f"https://repo{s:02d}.example/", now, "")
                for s in range(1, p.sources + 1)
            ),
        )
        load(
            _INSERT_PACKAGE,
            _package_rows(p, rng, now),
        )
        load(
            "INSERT INTO purchases (id, source_id, package_id, allowed_for, nickname, status, "
            "total, commission, currency, purchased_at, txn_id, profile_url, payment_platform) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            _purchase_rows(p, rng, now),
        )
        apps = p.applications + 1  # the last one is kept for the rate-limited measurement
        load(
            "INSERT INTO applications (id, source_id, name, shape, timezone, created_at) "
            "VALUES (?,?,?,?,?,?)",
            (
                (
                    a,
                    (a - 1) % p.sources + 1,
                    f"app-{a:05d}",
                    None if a == 1 or a % 5 else "B",
                    None if a == 1 else ZONES[a % len(ZONES)],
                    now,
                )
                for a in range(1, apps + 1)
            ),
        )
        keys = [_seeded_key(rng) for _ in range(apps)]
        load(
            "INSERT INTO secret_keys (id, application_id, key_hash, prefix, created_at) "
            "VALUES (?,?,?,?,?)",
            ((a, a, hash_key(k), display_prefix(k), now) for a, k in enumerate(keys, 1)),
        )
        days = [(today - timedelta(days=d)).isoformat() for d in range(1, p.usage_days + 1)]
        load(
            "INSERT INTO usage_days (application_id, day, count) VALUES (?,?,?)",
            ((a, day, rng.randint(0, 900)) for a in range(1, p.applications + 1) for day in days),
        )
        db.execute("ANALYZE")
        db.execute("PRAGMA journal_mode=WAL")
    finally:
        db.close()
    sample = random.Random(p.seed + 1)
    online = [n for n in (sample.randint(1, p.packages) for _ in range(4000)) if n % 50 != 7]
    return {
        "params": asdict(p),
        "today": today.isoformat(),
        "hot_package": _package_id(1, 1),
        "hot_key": keys[0],
        "limited_key": keys[-1],
        "keys": keys[:-1],
        "hot_buyer": _nickname(1),
        "online_packages": [_package_id((n - 1) % p.sources + 1, n) for n in online],
    }


def cache_name(p: Params, today: date) -> str:
    from pkgcat.storage.migrate import head_revision

    blob = json.dumps([GENERATOR_VERSION, head_revision(), today.isoformat(), asdict(p)])
    return f"catalogue-{p.packages}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}.db"


def ensure(p: Params, cache: Path = CACHE_DIR, today: date | None = None) -> Catalogue:
    """The cached catalogue for ``p``, generated first if it is not there yet."""
    p.check()
    today = today or datetime.now(UTC).date()
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / cache_name(p, today)
    if path.exists() and path.with_suffix(".json").exists():
        return Catalogue.load(path)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        started = time.perf_counter()
        meta = _write(partial, p, today)
        for suffix in ("-wal", "-shm"):
            Path(f"{partial}{suffix}").unlink(missing_ok=True)
        partial.rename(path)  # complete, or not there at all
        path.with_suffix(".json").write_text(json.dumps(meta) + "\n")
        print(
            f"generated {path.name} ({p.packages:,} packages, {p.purchases:,} purchases) "
            f"in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    finally:
        for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
            leftover.unlink(missing_ok=True)
    return Catalogue.load(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = Params()
    for name in ("packages", "sources", "purchases", "hot_buyers", "applications", "usage_days"):
        parser.add_argument(
            f"--{name.replace('_', '-')}", type=int, default=getattr(defaults, name)
        )
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    params = Params(**vars(args))
    print(ensure(params).path)


if __name__ == "__main__":
    main()
