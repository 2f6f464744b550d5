"""Refusals of the store against its normal answers: is a hostile request measurably slower?

The store (docs/store.md) answers a forged token, another device's token, a revoked token,
a package nobody bought and a reused download URL by refusing them. Each refusal must take
no longer than the normal answer it stands beside (a valid token's ``user_info``, an owned
package's ``authorize_download``, a first download), or its time would tell a prober
something. This measures them in one process on one catalogue, in rounds that interleave
the cases, and reports each case's median time over its normal answer's::

    .venv/bin/python -m bench.store                   # 5 rounds of 300 requests a case
    .venv/bin/python -m bench.store --rounds 3 --requests 100

The app runs in-process (Starlette's test client, no sockets), on a SQLite file, with the
store in test mode and the sign-in done through the real page with a code read from a real
SMTP server (aiosmtpd) on 127.0.0.1. Goal: every ratio at most 1.10 (within noise).
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from aiosmtpd.controller import Controller
from starlette.testclient import TestClient
from tests import factories as f
from tests.debs import build_deb
from tests.servers import free_port
from tests.store.conftest import MODEL, UDID, Mailbox
from tests.store.sileo import Sileo
from typer.testing import CliRunner

from bench.ratios import ratio_table
from pkgcat.app import create_app
from pkgcat.cli import app as cli
from pkgcat.config import Settings
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.migrate import upgrade

PASSPHRASE = "a bench passphrase, long enough"  # noqa: S105 - seals a throwaway database
STORE = "http://testserver/store/"
GOAL = 1.10


def catalogue(directory: Path, url: str) -> None:
    """One source with two paid packages (one to buy, one never bought), published."""
    upgrade(url)
    admin = CatalogueAdmin(url)
    try:
        admin.load(
            sources=[f.source(1, "Alpha")],
            applications=[f.application(1, 1, "alpha-a")],
            packages=[
                f.package(1, 1, "com.alpha.paid", price="1.99"),
                f.package(2, 1, "com.alpha.other", price="4.99"),
            ],
            purchases=[],
        )
    finally:
        admin.close()
    env = {
        "PKGCAT_DATABASE_URL": url,
        "PKGCAT_BLOB_DIR": str(directory / "blobs"),
        "PKGCAT_REPOSITORY_PASSPHRASE": PASSPHRASE,
    }
    runner = CliRunner()
    for args in (
        ["repo", "key", "create"],
        ["publish", str(build_deb(directory, "com.alpha.paid", "2.0", "iphoneos-arm64")),
         "--source", "Alpha"],
        ["publish", str(build_deb(directory, "com.alpha.other", "1.0", "iphoneos-arm64")),
         "--source", "Alpha"],
    ):  # fmt: skip
        done = runner.invoke(cli, args, env=env, catch_exceptions=False)
        assert done.exit_code == 0, done.output


def timed(call: Callable[[], httpx.Response], expect: int, count: int) -> list[float]:
    """Seconds each of ``count`` calls took; each must answer ``expect``."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        response = call()
        times.append(time.perf_counter() - started)
        assert response.status_code == expect, (response.status_code, response.text[:200])
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pkgcat-bench-store-") as folder:
        directory = Path(folder)
        url = f"sqlite:///{directory / 'store.db'}"
        catalogue(directory, url)
        box, port = Mailbox(), free_port()
        mail = Controller(box, hostname="127.0.0.1", port=port)
        mail.start()
        settings = Settings(
            database_url=url,
            blob_dir=str(directory / "blobs"),
            repository_passphrase=PASSPHRASE,
            store_url=STORE,
            store_allow_http=True,
            store_platform="test",
            smtp_host="127.0.0.1",
            smtp_port=port,
            smtp_from="store@example.test",
            smtp_starttls=False,
            access_log=False,
        )
        try:
            with TestClient(create_app(settings)) as http:
                print(measure(http, box, args.rounds, args.requests))
        finally:
            mail.stop()


def measure(http: TestClient, box: Mailbox, rounds: int, count: int) -> str:
    buyer = Sileo(http, STORE)
    assert buyer.sign_in(box, "buyer@example.test").status_code == 303
    bought = buyer.post("package/com.alpha.paid/purchase", token=buyer.token,
                        payment_secret=buyer.payment_secret)  # fmt: skip
    assert bought.json() == {"status": 0}, bought.text
    revoked = Sileo(http, STORE)
    assert revoked.sign_in(box, "gone@example.test").status_code == 303
    assert revoked.post("sign_out", token=revoked.token).status_code == 200
    other_device = Sileo(http, STORE, udid="f" * 40, model=MODEL, token=buyer.token)
    assert other_device.udid != UDID
    forged = secrets.token_urlsafe(32)

    def authorize(package: str) -> httpx.Response:
        return buyer.post(f"package/{package}/authorize_download", token=buyer.token,
                          version="2.0" if package == "com.alpha.paid" else "1.0", repo="")  # fmt: skip

    def download_path() -> str:
        found = urlsplit(authorize("com.alpha.paid").json()["url"])
        return f"{found.path}?{found.query}"

    spent = [download_path() for _ in range(count)]
    for path in spent:
        assert http.get(path).status_code == 200

    def first_downloads() -> Callable[[], httpx.Response]:
        fresh = iter([download_path() for _ in range(count)])  # made outside the timing
        return lambda: http.get(next(fresh))

    def reused() -> Callable[[], httpx.Response]:
        again = iter(spent)
        return lambda: http.get(next(again))

    cases: dict[str, tuple[str, Callable[[], Callable[[], httpx.Response]], int]] = {
        "user_info, valid token": ("", lambda: lambda: buyer.post("user_info", token=buyer.token), 200),
        "user_info, forged token": ("user_info, valid token",
                                    lambda: lambda: buyer.post("user_info", token=forged), 401),
        "user_info, other device": ("user_info, valid token",
                                    lambda: lambda: other_device.post("user_info", token=buyer.token), 401),
        "user_info, revoked token": ("user_info, valid token",
                                     lambda: lambda: revoked.post("user_info", token=revoked.token), 401),
        "authorize, owned": ("", lambda: lambda: authorize("com.alpha.paid"), 200),
        "authorize, not bought": ("authorize, owned", lambda: lambda: authorize("com.alpha.other"), 403),
        "download, first use": ("", first_downloads, 200),
        "download, reused URL": ("download, first use", reused, 410),
    }  # fmt: skip
    medians: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, (_, make, expect) in cases.items():
            medians[name].append(statistics.median(timed(make(), expect, count)))
    lines, ratios = ratio_table(
        f"store refusals against normal answers, {rounds} rounds x {count} requests",
        "request",
        medians,  # each case's rounds' medians: the median of them is its figure
        {name: against or None for name, (against, _, _) in cases.items()},
    )
    worst = max(ratios.values())
    verdict = "met" if worst <= GOAL else "NOT met"
    lines.append(f"goal: every refusal at most {GOAL:.2f}x its normal answer: {verdict}")
    return "\n".join(lines)


if __name__ == "__main__":
    os.environ.pop("PKGCAT_DATABASE_URL", None)
    main()
