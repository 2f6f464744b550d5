"""The library and the command against a real ``pkgcat serve`` on 127.0.0.1, over the demo."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from pkgcat.client import Client
from tests.servers import PKGCAT, demo_server

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One server for the module: the demo catalogue, shape A by default, one app in shape B."""
    with demo_server(tmp_path_factory.mktemp("served")) as server:
        apps = {a["name"]: a for a in server.apps}
        yield {"base": server.base, "apps": apps, "env": server.env}


def test_the_library_reads_both_shapes_of_a_real_server(served: dict[str, Any]) -> None:
    apps = served["apps"]
    a, b = apps["havoc-dashboard"], apps["havoc-legacy"]
    assert (a["shape"], b["shape"]) == ("A", "B")
    paid = a["paid_package"]
    with (
        Client(served["base"], a["secret_key"]) as in_a,
        Client(served["base"], b["secret_key"], key_in="query") as in_b,
        Client(served["base"], apps["nebula-paris"]["secret_key"]) as in_paris,
    ):
        usage_a, usage_b = in_a.usage(), in_b.usage()
        assert len(usage_a) == len(usage_b) == 31
        assert [d.day for d in usage_a] == [d.day for d in usage_b]
        assert usage_b[-1].usage >= 1  # shape B sends this one as a string
        package_a, package_b = in_a.package(paid), in_b.package(paid)
        assert package_a.date == package_b.date == in_paris.package(paid).date
        assert (package_a.price, package_a.size) == (package_b.price, package_b.size)
        assert package_a.sha256 is not None
        assert package_b.sha256 is None
        assert package_a.depends == package_b.depends
        buyers_a = list(in_a.iter_buyers(paid))
        buyers_b = list(in_b.iter_buyers(paid, page_size=60))
        assert len(buyers_a) == in_a.buyers(paid, limit=1).total >= 240
        assert [(x.txn_id, x.date, x.total) for x in buyers_a] == [
            (x.txn_id, x.date, x.total) for x in buyers_b
        ]
        assert sum(x.total for x in buyers_a) > Decimal(0)


def test_the_command_against_a_real_server(served: dict[str, Any]) -> None:
    legacy = served["apps"]["havoc-legacy"]
    env = served["env"] | {"PKGCAT_SECRET_KEY": legacy["secret_key"]}
    base = ["--base-url", served["base"]]

    def client(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PKGCAT, "client", *args, *base], env=env, capture_output=True, text=True, timeout=30
        )

    usage = client("usage", "--days", "3", "--json")
    assert usage.returncode == 0, usage.stderr
    days = json.loads(usage.stdout)
    assert len(days) == 4
    assert all(d["date"].endswith("T00:00:00+00:00") for d in days)
    assert all(isinstance(d["usage"], int) for d in days)
    buyers = client("buyers", legacy["paid_package"], "--all", "--csv")
    assert buyers.returncode == 0, buyers.stderr
    assert len(buyers.stdout.splitlines()) >= 1 + 240
    missing = client("package", "com.nobody.nothing")
    assert missing.returncode == 5
    assert missing.stderr.startswith("error: package: no package 'com.nobody.nothing'")
    assert legacy["secret_key"] not in missing.stderr + usage.stdout + buyers.stdout
