"""``pkgcat whitelist``: the operator's side of a package's whitelist, with the API's rules."""

from __future__ import annotations

import json
from typing import Any

from pkgcat.storage.admin import CatalogueAdmin
from tests import factories as f
from tests.licences.conftest import BOUGHT, UNKNOWN


def test_devices_are_added_listed_and_removed(run: Any) -> None:
    admin = CatalogueAdmin(run.url)
    try:
        admin.load(sources=[f.source(1, "Alpha")], packages=[f.package(1, 1, "com.alpha.paid")])
    finally:
        admin.close()
    added = run("whitelist", "add", "com.alpha.paid", UNKNOWN, BOUGHT, "--description", "testers")
    assert added.exit_code == 0, added.output
    assert "com.alpha.paid: 2 added" in added.stdout
    again = run("whitelist", "add", "com.alpha.paid", BOUGHT, "--description", "press")
    assert "com.alpha.paid: 1 with a new description" in again.stdout
    listed = json.loads(run("whitelist", "list", "com.alpha.paid", "--json").stdout)
    assert [(e["udid"], e["description"]) for e in listed] == [
        (BOUGHT, "press"),
        (UNKNOWN, "testers"),
    ]
    removed = run("whitelist", "remove", "com.alpha.paid", UNKNOWN, UNKNOWN[:-1] + "9")
    assert "com.alpha.paid: 1 removed, 1 unchanged" in removed.stdout
    assert len(json.loads(run("whitelist", "list", "com.alpha.paid", "--json").stdout)) == 1


def test_refusals_are_one_line(run: Any) -> None:
    unknown = run("whitelist", "add", "com.nobody", UNKNOWN)
    assert unknown.exit_code == 1
    assert "no package 'com.nobody' in this catalogue" in unknown.stderr
    malformed = run("whitelist", "add", "com.nobody", "not/a/udid")
    assert malformed.exit_code == 2
    assert "udid: not a device id" in malformed.stderr
    assert "Traceback" not in unknown.output + malformed.output
