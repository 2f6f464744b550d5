"""The import commands, in-process through Click's runner, and the served catalogue after them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pkgcat.app import create_app
from pkgcat.config import Settings
from tests.conftest import check_against_openapi
from tests.hostile import Hostile, body
from tests.ingest.conftest import stanza, write_repo


def test_import_repo_json_is_one_object_with_every_skip(tmp_path: Path, run: Any) -> None:
    write_repo(tmp_path / "repo", [stanza("com.example.a"), stanza("com.example.b", Version=None)])
    result = run(
        "import-repo", str(tmp_path / "repo"), "--source", "R", "--url", "https://r.example/", "--json"
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["records"] == {
        "read": 2, "added": 1, "updated": 0, "unchanged": 0, "removed": 0, "skipped": 1,
    }  # fmt: skip
    assert summary["skipped"] == [
        {
            "index": "Packages",
            "line": 8,
            "package": "com.example.b",
            "reason": "missing required field Version",
        }
    ]
    assert summary["source_created"] is True


def test_bad_options_exit_with_code_2(tmp_path: Path, run: Any) -> None:
    result = run("import-repo", str(tmp_path), "--source", "R", "--depictions", "some")
    assert result.exit_code == 2
    assert "--depictions: 'some' is not one of repo, all, off" in result.stderr


def test_operator_files_are_refused_with_each_problem_on_its_own_line(
    tmp_path: Path, run: Any
) -> None:
    write_repo(tmp_path / "repo", [stanza("com.example.a")])
    run("import-repo", str(tmp_path / "repo"), "--source", "R", "--url", "https://r.example/")
    prices = tmp_path / "prices.csv"
    prices.write_text("package,price,currency\ncom.example.a,free,USD\ncom.example.zz,1,USD\n")
    result = run("import-prices", str(prices))
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "  line 2: column 'price': 'free' is not an amount; hint: write it like 1.99, or 0",
        "  line 3: column 'package': no package 'com.example.zz' in the catalogue; "
        "hint: import its repository first (pkgcat import-repo)",
        f"error: {prices}: 2 problems, nothing was imported",
    ]
    missing = run("import-stats", str(tmp_path / "nothing.csv"))
    assert missing.exit_code == 1
    assert "nothing.csv: cannot be read (No such file or directory)" in missing.stderr


def test_from_a_repository_to_a_served_catalogue(tmp_path: Path, run: Any) -> None:
    """The operator's path: import, price, sales, statistics, a key, then the API answers."""
    repo = tmp_path / "repo"
    write_repo(
        repo,
        [
            stanza(
                "com.example.paid",
                Name="Paid",
                Tag="cydia::commercial",
                Depends="firmware (>= 15.0)",
            ),
            stanza("com.example.free", Name="Free", Icon="icons/free.png"),
        ],
        compressions=(".xz",),
    )
    assert (
        run(
            "import-repo", str(repo), "--source", "Example", "--url", "https://example.org/repo/"
        ).exit_code
        == 0
    )
    created = json.loads(
        run("app", "create", "--source", "Example", "--name", "shop", "--json").stdout
    )
    key = {"Authorization": f"Bearer {created['secret_key']}"}
    with TestClient(create_app(Settings(database_url=run.url))) as http:

        def details(package: str) -> dict[str, Any]:
            response = http.get(
                "/1.0/package/details.json", params={"package": package}, headers=key
            )
            check_against_openapi("/1.0/package/details.json", response)
            body: dict[str, Any] = response.json()["response"]
            return body

        paid = details("com.example.paid")
        # Paid, price not known yet: an empty price; its buyers can be asked for.
        assert (paid["price"], paid["currency"]) == ("", "USD")
        assert paid["compatible"] == ["iOS 15", "iOS 16", "iOS 17", "iOS 18", "iOS 26"]
        assert paid["source"] == {
            "name": "Test Label", "origin": "Test Origin", "url": "https://example.org/repo/",
        }  # fmt: skip
        free = details("com.example.free")
        assert (free["price"], free["icon"], free["url"]) == (
            "0.00", "https://example.org/repo/icons/free.png", "",
        )  # fmt: skip
        buyers = http.get(
            "/1.0/package/buyers.json", params={"package": "com.example.paid"}, headers=key
        )
        assert buyers.json() == {
            "code": 0, "response": {"start": 0, "limit": 25, "total": "0", "page": 1, "buyers": []},
        }  # fmt: skip
        prices = tmp_path / "prices.jsonl"
        prices.write_text('{"package": "com.example.paid", "price": "2.5", "currency": "EUR"}\n')
        assert (
            run("import-prices", str(prices)).stdout
            == "prices: 1 rows, 0 added, 1 updated, 0 unchanged\n"
        )
        sales = tmp_path / "sales.csv"
        sales.write_text(
            "package,nickname,status,total,commission,currency,date,txn_id,payment_platform\n"
            "com.example.paid,ada,Completed,2.50,0.40,EUR,2024-03-10T12:00:00Z,T-1,stripe\n"
        )
        for _ in range(2):
            assert run("import-purchases", str(sales), "--json").exit_code == 0
        stats = tmp_path / "stats.csv"
        stats.write_text(
            "package,total_download,total_votes,total_value_votes\ncom.example.paid,90,2,9\n"
        )
        assert run("import-stats", str(stats)).exit_code == 0
        paid = details("com.example.paid")
        assert (paid["price"], paid["currency"], paid["total_download"], paid["total_value_votes"]) == (
            "2.50", "EUR", "90", "9",
        )  # fmt: skip
        page = http.get(
            "/1.0/package/buyers.json", params={"package": "com.example.paid"}, headers=key
        )
        assert [
            (b["nickname"], b["total"], b["txn_id"]) for b in page.json()["response"]["buyers"]
        ] == [("ada", "2.50", "T-1")]
        # A new index without the paid package: offline, still visible to its own source.
        write_repo(
            repo,
            [stanza("com.example.free", Name="Free", Icon="icons/free.png")],
            compressions=(".xz",),
        )
        again = json.loads(run("import-repo", str(repo), "--source", "Example", "--json").stdout)
        assert again["packages"]["set_offline"] == 1
        assert details("com.example.paid")["online"] == "0"
        assert details("com.example.paid")["price"] == "2.50"


def test_a_terminal_sees_a_progress_bar_and_json_never_does(
    tmp_path: Path, run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from rich.console import Console

    from pkgcat.cli import imports

    write_repo(tmp_path / "repo", [stanza(f"com.example.p{n}") for n in range(600)])
    screen = io.StringIO()
    monkeypatch.setattr(imports, "stderr", Console(file=screen, force_terminal=True, width=100))
    args = ("import-repo", str(tmp_path / "repo"), "--source", "R", "--url", "https://r.example/")
    assert run(*args).exit_code == 0
    assert "parsing" in screen.getvalue()
    assert "600/600" in screen.getvalue()
    screen.seek(0)
    screen.truncate()
    assert run(*args, "--refresh", "--json").exit_code == 0
    assert "parsing" not in screen.getvalue()


def test_a_refused_address_is_one_line_naming_the_setting_that_allows_it(
    tmp_path: Path, run: Any, hostile: Callable[..., Hostile], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_repo(tmp_path / "repo", [stanza("com.example.a")])
    files = {f"/{n}": body((tmp_path / "repo" / n).read_bytes()) for n in ("Packages", "Release")}
    server = hostile(files)
    result = run("import-repo", server.url(), "--source", "R")
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {server.url('/InRelease')}: 127.0.0.1 is a loopback address; "
        f"PKGCAT_FETCH_ALLOW=127.0.0.1:{server.port} would allow it; nothing was imported\n"
    )
    assert server.connections == 0
    monkeypatch.setenv("PKGCAT_FETCH_ALLOW", f"127.0.0.1:{server.port}")
    assert run("import-repo", server.url(), "--source", "R").exit_code == 0


def test_what_a_repository_says_reaches_the_terminal_escaped(tmp_path: Path, run: Any) -> None:
    evil = stanza("com.example.b").replace("com.example.b", "evil\x1b]2;owned\x07")
    write_repo(tmp_path / "repo", [stanza("com.example.a"), evil])
    result = run(
        "import-repo", str(tmp_path / "repo"), "--source", "R", "--url", "https://r.example/"
    )
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout
    assert "skipped Packages:8 evil\\x1b]2;owned\\x07: holds the control character" in result.stdout
