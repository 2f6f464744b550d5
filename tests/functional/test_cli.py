"""The operator's command line, in-process through Click's runner."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from starlette.testclient import TestClient

from pkgcat.app import create_app
from pkgcat.config import Settings
from pkgcat.storage.migrate import head_revision


def api_for(url: str) -> TestClient:
    return TestClient(create_app(Settings(database_url=url)))


def test_demo_json_seeds_the_promised_catalogue(run: Any) -> None:
    result = run("demo", "--json")
    assert result.exit_code == 0, result.output
    apps = json.loads(result.stdout)["applications"]
    assert len(apps) == 4
    assert {a["shape"] for a in apps} == {"A", "B"}
    assert "Europe/Paris" in {a["timezone"] for a in apps}
    assert len({a["source"] for a in apps}) == 2
    for a in apps:
        assert set(a) == {
            "name", "source", "shape", "timezone", "secret_key",
            "paid_package", "free_package", "offline_package",
        }  # fmt: skip
        assert re.fullmatch(r"pkc_[0-9A-Za-z]{40}", a["secret_key"])
    with api_for(run.url) as http:
        for a in (apps[0], apps[2]):
            auth = {"Authorization": f"Bearer {a['secret_key']}"}
            buyers = http.get(
                "/1.0/package/buyers.json",
                params={"package": a["paid_package"], "limit": 100, "page": 1},
                headers=auth,
            ).json()["response"]
            assert int(buyers["total"]) >= 240
            scopes = set()
            for page in range(1, int(buyers["total"]) // 100 + 2):
                body = http.get(
                    "/1.0/package/buyers.json",
                    params={"package": a["paid_package"], "limit": 100, "page": page},
                    headers=auth,
                ).json()["response"]
                scopes |= {b["allowed_for"] for b in body["buyers"]}
            assert scopes == {"package", "source"}
            paid = http.get(
                "/1.0/package/details.json", params={"package": a["paid_package"]}, headers=auth
            ).json()["response"]
            assert all(value not in ("", [], None) for key, value in paid.items()), paid
            assert len(paid["screenshots"]) >= 2
            free = http.get(
                "/1.0/package/details.json", params={"package": a["free_package"]}, headers=auth
            ).json()["response"]
            assert free["price"] == "0.00"
            offline = http.get(
                "/1.0/package/details.json", params={"package": a["offline_package"]}, headers=auth
            ).json()["response"]
            assert offline["online"] == "0"
            usage = http.get(
                "/1.0/application/usage.json", params={"days": 60}, headers=auth
            ).json()["response"]
            assert sum(1 for e in usage[:-1] if e["usage"]) >= 40


def test_the_demo_s_recent_usage_is_split_by_operation_and_its_older_is_not(run: Any) -> None:
    """`--by operation` shows a split on the demo (docs/cli.md's example), and the dashboard's
    "not split by operation" has older days to show."""
    result = run("demo", "--json")
    key = json.loads(result.stdout)["applications"][0]["secret_key"]
    with api_for(run.url) as http:
        days = http.get(
            "/1.0/application/usage.json",
            params={"days": 60, "by": "operation"},
            headers={"Authorization": f"Bearer {key}"},
        ).json()["response"][:-1]  # today: this request alone
    recent, older = days[-30:], days[:-30]
    assert all(sum(e["operations"].values()) == e["usage"] for e in recent)
    assert sum(len(e["operations"]) >= 4 for e in recent) >= 20
    assert sum(e["usage"] for e in older) > 0
    assert all(e["operations"] == {} for e in older)


def test_demo_refuses_a_catalogue_unless_forced_and_reuse_prints_a_fresh_key(run: Any) -> None:
    first = json.loads(run("demo", "--json").stdout)["applications"][0]["secret_key"]
    refused = run("demo")
    assert refused.exit_code == 1
    assert "holds a catalogue already" in refused.stderr
    reused = run("demo", "--reuse")
    assert reused.exit_code == 0
    fresh = re.search(r"pkc_[0-9A-Za-z]{40}", reused.stdout)
    assert fresh is not None
    assert fresh.group() != first
    reused_json = json.loads(run("demo", "--reuse", "--json").stdout)["applications"]
    assert len(reused_json) == 1
    assert reused_json[0]["secret_key"] not in (first, fresh.group())
    forced = run("demo", "--force", "--json")
    assert forced.exit_code == 0
    with api_for(run.url) as http:
        usage = "/1.0/application/usage.json"
        assert http.get(usage, params={"secret_key": first}).json()["code"] == 5
        assert http.get(usage, params={"secret_key": fresh.group()}).json()["code"] == 5
        new = json.loads(forced.stdout)["applications"][0]["secret_key"]
        assert http.get(usage, params={"secret_key": new}).json()["code"] == 0


def test_source_app_and_key_lifecycle(run: Any) -> None:
    assert run("source", "add", "Gamma", "--url", "https://gamma.example/").exit_code == 0
    duplicate = run("source", "add", "Gamma", "--url", "https://gamma.example/")
    assert duplicate.exit_code == 1
    assert "exists already" in duplicate.stderr
    created = run(
        "app", "create", "--source", "Gamma", "--name", "tool", "--shape", "b",
        "--timezone", "Asia/Tokyo", "--json",
    )  # fmt: skip
    assert created.exit_code == 0, created.output
    record = json.loads(created.stdout)
    assert {k: record[k] for k in ("name", "source", "shape", "timezone")} == {
        "name": "tool",
        "source": "Gamma",
        "shape": "B",
        "timezone": "Asia/Tokyo",
    }
    key = record["secret_key"]
    second = json.loads(run("key", "create", "--source", "Gamma", "--app", "tool", "--json").stdout)
    listed = run("key", "list", "--json")
    assert key not in listed.stdout
    prefixes = [k["prefix"] for k in json.loads(listed.stdout)]
    assert prefixes == [key[:12], second["secret_key"][:12]]
    revoked = run("key", "revoke", key[:12])
    assert revoked.exit_code == 0
    assert key[:12] in revoked.stdout
    with api_for(run.url) as http:
        usage = "/1.0/application/usage.json"
        assert http.get(usage, params={"secret_key": key}).json()["code"] == 5
        body = http.get(usage, params={"secret_key": second["secret_key"], "days": 1}).json()
        assert re.fullmatch(r"\d{2}-\d{2}-\d{4} 00:00:00", body["response"][0]["date"])


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["app", "create", "--source", "Nope", "--name", "x"], 1, "no source named 'Nope'"),
        (["app", "create", "--source", "S", "--name", "x", "--shape", "C"], 2, "--shape"),
        (
            ["app", "create", "--source", "S", "--name", "x", "--timezone", "Mars/X"],
            2,
            "--timezone",
        ),
        (["key", "revoke", "pkc_abcd1234"], 1, "no live key"),
        (["key", "create", "--source", "Nope", "--app", "x"], 1, "no source named"),
    ],
)
def test_errors_are_one_clear_line(run: Any, args: list[str], code: int, message: str) -> None:
    result = run(*args)
    assert result.exit_code == code
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_names_are_printed_as_given_never_read_as_markup(run: Any) -> None:
    added = run("source", "add", "[/]Odd [red]name", "--url", "https://odd.example/")
    assert added.exit_code == 0, added.output
    assert "[/]Odd [red]name" in added.stdout
    missing = run("app", "create", "--source", "[/x]", "--name", "a")
    assert missing.exit_code == 1
    assert "no source named '[/x]'" in missing.stderr


@pytest.mark.parametrize("url", ["gamma.example", "ftp://gamma.example/", ""])
def test_a_source_needs_an_http_address(run: Any, url: str) -> None:
    result = run("source", "add", "Gamma", "--url", url)
    assert result.exit_code == 1
    assert "is not an http:// or https:// address" in result.stderr


def test_database_passwords_are_never_printed(run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PKGCAT_DATABASE_URL", "postgresql://seller:s3cr3tpw@127.0.0.1:1/none")
    result = run("migrate")
    assert result.exit_code == 2
    assert "cannot migrate postgresql://seller:***@127.0.0.1:1/none: connection" in result.stderr
    assert "s3cr3tpw" not in result.output


def test_bad_settings_name_the_variable(run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PKGCAT_SHAPE", "Z")
    result = run("migrate")
    assert result.exit_code == 2
    assert "PKGCAT_SHAPE" in result.stderr


def test_migrate_reports_the_revision(run: Any) -> None:
    result = run("migrate")
    assert result.exit_code == 0
    assert f"revision {head_revision()}" in result.stdout
