"""``pkgcat client``, in-process: our app (or a server double) behind the command's transport."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner, Result

from pkgcat.cli import app as cli
from pkgcat.cli import command_tree
from pkgcat.cli.client import EXIT_CODES
from pkgcat.storage.admin import CatalogueAdmin
from tests import factories as f
from tests.client.conftest import (
    KEY,
    NARROW,
    TERMINAL,
    Double,
    InProcess,
    Run,
    answer,
    invoke,
    recorded,
    shown,
)
from tests.conftest import AppFactory, Clock


def test_usage_json_is_the_normalized_list_the_same_in_both_shapes(run: Run) -> None:
    outputs = [run(app, "usage", "--days", "2", "--json") for app in ("alpha-a", "alpha-b")]
    assert all(r.exit_code == 0 for r in outputs)
    a, b = (json.loads(r.stdout) for r in outputs)
    assert a == [
        {"date": "2024-03-29T00:00:00+00:00", "usage": 0},
        {"date": "2024-03-30T00:00:00+00:00", "usage": 0},
        {"date": "2024-03-31T00:00:00+00:00", "usage": 1},
    ]
    assert b == a  # shape B's "DD-MM-YYYY" dates and its string count, normalized


def test_usage_csv(run: Run) -> None:
    result = run("alpha-b", "usage", "--days", "1", "--csv")
    assert result.stdout.splitlines() == [
        "date,usage",
        "2024-03-30T00:00:00+00:00,0",
        "2024-03-31T00:00:00+00:00,1",
    ]


def test_usage_table_draws_a_bar_per_day(
    admin: CatalogueAdmin, make_api: AppFactory, clock: Clock
) -> None:
    api = make_api()
    for _ in range(3):  # three requests yesterday, then the command's one today
        clock.advance(days=-1)
        api.get("/1.0/application/usage.json", api.keys["alpha-a"])
        clock.advance(days=1)
    result = invoke(InProcess(api.http), api.keys["alpha-a"], "usage", "--days", "2", env=TERMINAL)
    output = shown(result)
    lines = {line.split()[1]: line for line in output.splitlines() if "2024-03-" in line}
    assert set(lines) == {"2024-03-29", "2024-03-30", "2024-03-31"}
    assert "█" * 40 in lines["2024-03-30"]  # the largest day gets the whole bar
    assert "█" * 13 in lines["2024-03-31"]
    assert "█" * 14 not in lines["2024-03-31"]
    assert "█" not in lines["2024-03-29"]
    assert "4 requests" in output


def test_package_json_in_shape_b_has_nulls_and_canonical_values(run: Run) -> None:
    result = run("alpha-b", "package", "com.alpha.paid", "--json")
    assert result.exit_code == 0
    body = json.loads(result.stdout)
    assert (body["architecture"], body["sha256"], body["replaces"]) == (None, None, None)
    assert body["source"] == {"name": "Alpha", "url": "http://alpha.example/", "origin": None}
    assert body["date"] == "2024-03-10T12:00:00+00:00"
    assert body["price"] == "1.99"
    assert body["size"] == 1400
    assert body["online"] is True
    assert body["pre_depends"] == {"raw": "", "groups": []}
    assert body["depends"]["groups"][0] == [
        {
            "name": "firmware",
            "operator": ">=",
            "version": "14.0",
            "architectures": [],
            "arch_qualifier": None,
        }
    ]


def test_a_price_not_known_yet_is_null_in_json_and_said_in_the_table() -> None:
    body = recorded("details_a")["response"] | {"price": ""}
    as_json = invoke(Double(answer(0, body)).transport, KEY, "package", "x", "--json")
    assert json.loads(as_json.stdout)["price"] is None
    table = invoke(Double(answer(0, body)).transport, KEY, "package", "x", env=TERMINAL)
    assert "not known yet (USD)" in shown(table)


def test_package_table_says_which_fields_the_server_did_not_send(run: Run) -> None:
    b = shown(run("alpha-b", "package", "com.alpha.paid", env=TERMINAL))
    assert "Paid 1.2.3" in b
    assert b.count("(not sent by this server)") == 4
    a = shown(run("alpha-a", "package", "com.alpha.paid", env=TERMINAL))
    assert "(not sent by this server)" not in a
    assert "iphoneos-arm64" in a


def test_shape_b_dates_follow_tz(run: Run, admin: CatalogueAdmin) -> None:
    issued = admin.load(
        applications=[f.application(5, 1, "b-tokyo", shape="B", timezone="Asia/Tokyo")]
    )
    key = issued[5].secret_key
    naive = json.loads(run(key, "package", "com.alpha.paid", "--json").stdout)
    tokyo = json.loads(run(key, "package", "com.alpha.paid", "--json", "--tz", "Asia/Tokyo").stdout)
    assert naive["date"] == "2024-03-10T21:00:00+00:00"  # Tokyo wall time, misread as UTC
    assert tokyo["date"] == "2024-03-10T21:00:00+09:00"  # the release instant, 12:00 UTC


def test_buyers_page_json_and_csv(run: Run) -> None:
    page = json.loads(run("alpha-a", "buyers", "com.alpha.paid", "--limit", "2", "--json").stdout)
    assert (page["start"], page["limit"], page["total"], page["page"]) == (0, 2, 3, 1)
    assert [b["txn_id"] for b in page["buyers"]] == ["P-NEW", "S-MID"]
    assert page["buyers"][1]["total"] == "9.00"
    assert page["buyers"][1]["date"] == "2024-03-29T12:00:00+00:00"
    rows = list(csv.reader(io.StringIO(run("alpha-a", "buyers", "com.alpha.paid", "--csv").stdout)))
    assert rows[0] == [
        "nickname", "status", "total", "commission", "currency", "date",
        "txn_id", "profile_url", "allowed_for", "payment_platform", "fee", "net",
    ]  # fmt: skip
    assert [r[6] for r in rows[1:]] == ["P-NEW", "S-MID", "P-OLD"]
    assert rows[2][2] == "9.00"


def test_buyers_all_walks_every_page_into_one_list(
    admin: CatalogueAdmin, make_api: AppFactory, clock: Clock
) -> None:
    admin.load(purchases=[f.purchase(1, 4, clock.now - timedelta(minutes=n)) for n in range(1, 8)])
    api = make_api()
    key = api.keys["alpha-a"]
    result = invoke(
        InProcess(api.http), key, "buyers", "com.alpha.other", "--all", "--limit", "3", "--json"
    )
    buyers = json.loads(result.stdout)
    assert isinstance(buyers, list)
    assert len(buyers) == len({b["txn_id"] for b in buyers}) == 9
    usage = api.get("/1.0/application/usage.json", key, days=1).json()["response"]
    # Cursor pages of 3, 3 and 3, the last saying nothing follows; then this request.
    assert usage[-1]["usage"] == 3 + 1
    csv_rows = invoke(InProcess(api.http), key, "buyers", "com.alpha.other", "--all", "--csv")
    assert len(csv_rows.stdout.splitlines()) == 1 + 9


def test_buyers_table_has_a_row_per_buyer_and_the_page_in_its_caption(run: Run) -> None:
    output = shown(run("alpha-a", "buyers", "com.alpha.paid", env=TERMINAL))
    assert "P-NEW" in output
    assert "P-OLD" in output
    assert "page 1: buyers 1-3 of 3" in output
    assert "status: Completed" in output


LONG_PACKAGE = "com.example." + "long-package-identifier-" * 3 + "end"
LONG_TXN = "TXN-" + "0123456789" * 6
LONG_NICKNAME = "a-buyer-with-a-" + "very-" * 6 + "long-nickname"


def test_a_narrow_terminal_shows_every_identifier_whole() -> None:
    details = recorded("details_a")["response"] | {"package": LONG_PACKAGE}
    page = recorded("buyers_a")["response"]
    page["buyers"][0] |= {"txn_id": LONG_TXN, "nickname": LONG_NICKNAME}
    package = shown(invoke(Double(answer(0, details)).transport, KEY, "package", "x", env=NARROW))
    buyers = shown(invoke(Double(answer(0, page)).transport, KEY, "buyers", "x", env=NARROW))
    for output in (package, buyers):
        assert "\t" not in output  # a table, not the plain lines
        assert "…" not in output
    assert LONG_PACKAGE in package
    assert LONG_TXN in buyers
    assert LONG_NICKNAME in buyers
    assert "2G069Z2B3FZ2K8XUR" in buyers
    assert "2026-11-13 15:30" in buyers  # the date stays on one line too


def test_a_narrow_terminal_shows_every_day_and_every_bar_whole() -> None:
    days = recorded("usage_a")["response"]
    output = shown(invoke(Double(answer(0, days)).transport, KEY, "usage", env=NARROW))
    assert "…" not in output
    rows = [line for line in output.splitlines() if "2026-11-" in line]
    assert [line.split()[1] for line in rows] == [d["date"][:10] for d in days]
    assert [line.split()[3] for line in rows] == [f"{d['usage']:,}" for d in days]
    assert max(line.count("█") for line in rows) == 40  # the busiest day's bar, uncut


def test_usage_not_on_a_terminal_is_the_dates_and_counts_in_plain_lines(run: Run) -> None:
    plain = run("alpha-b", "usage", "--days", "1")
    assert plain.exit_code == 0
    assert plain.stdout.splitlines() == [
        "date\tusage",
        "2024-03-30T00:00:00+00:00\t0",
        "2024-03-31T00:00:00+00:00\t1",
    ]


def test_buyers_not_on_a_terminal_are_every_field_in_plain_lines(run: Run) -> None:
    plain = run("alpha-a", "buyers", "com.alpha.paid")
    as_csv = run("alpha-a", "buyers", "com.alpha.paid", "--csv")
    assert plain.exit_code == 0
    rows = [line.split("\t") for line in plain.stdout.splitlines()]
    assert rows == list(csv.reader(io.StringIO(as_csv.stdout)))  # the same fields and values
    assert [r[6] for r in rows] == ["txn_id", "P-NEW", "S-MID", "P-OLD"]


def test_a_long_page_not_on_a_terminal_keeps_every_identifier_whole() -> None:
    page = recorded("buyers_a")["response"]
    page["buyers"][0] |= {"txn_id": LONG_TXN, "nickname": LONG_NICKNAME}
    plain = invoke(Double(answer(0, page)).transport, KEY, "buyers", "x")
    header, first, _ = (line.split("\t") for line in plain.stdout.splitlines())
    row = dict(zip(header, first, strict=True))
    assert (row["txn_id"], row["nickname"]) == (LONG_TXN, LONG_NICKNAME)
    assert row["date"] == "2026-11-13T15:30:09+00:00"
    assert row["profile_url"] == "https://forum.example/u/kaijb300"


def test_a_package_not_on_a_terminal_is_a_field_and_its_value_per_line() -> None:
    body = recorded("details_b")["response"] | {"package": LONG_PACKAGE, "price": ""}
    plain = invoke(Double(answer(0, body)).transport, KEY, "package", "x")
    assert plain.exit_code == 0
    lines = plain.stdout.splitlines()
    assert lines[0] == "field\tvalue"
    fields = dict(line.split("\t") for line in lines[1:])
    assert fields["package"] == LONG_PACKAGE
    assert fields["price"] == ""  # not known yet: null in JSON, empty here
    assert fields["architecture"] == fields["sha256"] == fields["source.origin"] == ""
    assert fields["source.name"] == body["source"]["name"]
    assert fields["date"].endswith("+00:00")
    assert fields["long_description"] == body["long_description"].replace("\n", "\\n")
    as_json = json.loads(
        invoke(Double(answer(0, body)).transport, KEY, "package", "x", "--json").stdout
    )
    assert {name.partition(".")[0] for name in fields} == set(as_json)  # every field, no other


def test_key_in_query(run: Run) -> None:
    assert run("alpha-a", "usage", "--key-in", "query", "--json").exit_code == 0


@pytest.mark.parametrize(
    ("app", "args", "code", "message"),
    [
        ("pkc_" + "z" * 40, ["usage"], 3, "secret_key: unknown or revoked secret key (code 5, HTTP 401"),
        ("alpha-a", ["usage", "--days", "0"], 4, "days: must be between 1 and 365"),
        ("alpha-a", ["package", "com.none"], 5, "no package 'com.none'"),
        ("beta-a", ["buyers", "com.alpha.paid"], 6, "belongs to another source"),
    ],
)  # fmt: skip
def test_api_errors_exit_with_their_code_and_one_line(
    run: Run, app: str, args: list[str], code: int, message: str
) -> None:
    result = run(app, *args)
    assert result.exit_code == code
    assert result.stdout == ""
    assert result.stderr.startswith("error: ")
    assert message in result.stderr
    assert result.stderr.count("\n") == 1
    assert "pkc_" not in result.stderr


@pytest.mark.parametrize(
    ("script", "code", "message"),
    [
        (answer(13, "slow", headers={"Retry-After": "3600"}), 7, "slow (code 13, HTTP 429"),
        (answer(15, "internal error; request id r-1", headers={"X-Request-Id": "r-1"}), 8, "request id r-1"),
        (httpx.Response(200, text="<html>"), 9, "not JSON"),
        (httpx.ConnectError("refused"), 10, "cannot reach http://catalogue.test"),
        (answer(6, "unknown API version"), 11, "unknown API version (code 6"),
    ],
)  # fmt: skip
def test_other_failures_exit_with_their_code(script: Any, code: int, message: str) -> None:
    result = invoke(Double(script).transport, KEY, "usage", "--retries", "0")
    assert result.exit_code == code
    assert message in result.stderr
    assert result.stderr.count("\n") == 1


def test_every_error_class_has_a_distinct_exit_code() -> None:
    codes = [code for _, code in EXIT_CODES]
    assert len(set(codes)) == len(codes)
    assert not {0, 1, 2} & set(codes)


@pytest.mark.parametrize(
    ("key", "args", "message"),
    [
        (None, ["usage"], "PKGCAT_SECRET_KEY is not set"),
        (KEY, ["usage", "--json", "--csv"], "choose one"),
        (KEY, ["buyers", "p", "--all", "--page", "2"], "--all and --page"),
        (KEY, ["usage", "--tz", "Mars/Olympus"], "--tz"),
        (KEY, ["usage", "--key-in", "cookie"], "--key-in"),
        (KEY, ["usage", "--base-url", "ftp://x"], "base_url"),
    ],
)
def test_usage_errors_exit_2_without_calling_the_server(
    key: str | None, args: list[str], message: str
) -> None:
    double = Double(answer(0, []))
    result = invoke(double.transport, key, *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert double.requests == []


def _usage_from(config: Path, env: dict[str, str], *args: str) -> tuple[Result, Double]:
    """``pkgcat client usage`` with ``config`` as the user's config folder, against a double."""
    double = Double(answer(response=recorded("usage_a")["response"]))
    environment = {"XDG_CONFIG_HOME": str(config), "PKGCAT_BASE_URL": None, **env}
    result = CliRunner().invoke(
        cli,
        ["client", "usage", "--days", "1", *args],
        env=environment,  # None unsets a variable
        obj=double.transport,
        catch_exceptions=False,
    )
    return result, double


def _write_config(folder: Path, text: str, mode: int = 0o600) -> Path:
    path = folder / "pkgcat" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def test_the_base_url_defaults_to_the_local_server(tmp_path: Path) -> None:
    result, double = _usage_from(tmp_path, {"PKGCAT_SECRET_KEY": KEY})
    assert result.exit_code == 0, result.output
    assert str(double.requests[0].url).startswith("http://127.0.0.1:8000/1.0/")


def test_the_config_file_gives_the_address_and_the_key(tmp_path: Path) -> None:
    _write_config(tmp_path, f'base_url = "https://shop.example/api"\nsecret_key = "{KEY}"\n')
    result, double = _usage_from(tmp_path, {"PKGCAT_SECRET_KEY": ""})
    assert result.exit_code == 0, result.output
    sent = double.requests[0]
    assert str(sent.url).startswith("https://shop.example/api/1.0/application/usage.json")
    assert sent.headers["authorization"] == f"Bearer {KEY}"


def test_the_environment_and_the_option_win_over_the_config_file(tmp_path: Path) -> None:
    _write_config(tmp_path, 'base_url = "https://file.example"\nsecret_key = "pkc_fromfile"\n')
    result, double = _usage_from(
        tmp_path, {"PKGCAT_SECRET_KEY": KEY, "PKGCAT_BASE_URL": "https://env.example"}
    )
    assert result.exit_code == 0, result.output
    assert double.requests[0].url.host == "env.example"
    assert double.requests[0].headers["authorization"] == f"Bearer {KEY}"
    result, double = _usage_from(
        tmp_path,
        {"PKGCAT_SECRET_KEY": KEY, "PKGCAT_BASE_URL": "https://env.example"},
        "--base-url",
        "https://option.example",
    )
    assert double.requests[0].url.host == "option.example"


def test_a_key_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = _write_config(tmp_path, f'secret_key = "{KEY}"\n', mode=0o644)
    result, double = _usage_from(tmp_path, {"PKGCAT_SECRET_KEY": ""})
    assert result.exit_code == 2
    assert f"chmod 600 {path}" in result.stderr
    assert KEY not in result.output
    assert double.requests == []


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("base_url = \n", "not valid TOML"),
        ('base_url = "x"\nkey = "k"\n', "unknown setting 'key'"),
        ("base_url = 8000\n", "base_url must be a non-empty string"),
    ],
)
def test_a_bad_config_file_is_named_in_one_line(tmp_path: Path, text: str, says: str) -> None:
    path = _write_config(tmp_path, text)
    result, _ = _usage_from(tmp_path, {"PKGCAT_SECRET_KEY": KEY})
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {path}")
    assert says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_no_command_takes_the_key_on_its_command_line() -> None:
    group = command_tree().commands["client"]
    for name in ("usage", "package", "buyers"):
        options = {o for p in group.commands[name].params for o in p.opts}
        assert not {o for o in options if "secret" in o or o == "--key"}, name
    result = CliRunner().invoke(cli, ["client", "usage", "--secret-key", KEY])
    assert result.exit_code == 2
