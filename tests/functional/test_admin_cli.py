"""The operator's listings and deletes (``pkgcat source|app|key``), on each backend.

The commands run in-process against the test's own database; where a running
server must notice a delete, the app is built on the same database and asked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError, OperationalError
from typer.testing import CliRunner, Result

from pkgcat.cli import app as cli_app
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.engine import engine_for
from tests import factories as f
from tests.conftest import Api, stored_count
from tests.debs import build_deb

USAGE = "/1.0/application/usage.json"
DETAILS = "/1.0/package/details.json"
LISTINGS = [("source", "list"), ("app", "list"), ("key", "list")]
ANSI = re.compile(r"\x1b\[[0-9;]*m")

Cli = Callable[..., Result]


@pytest.fixture
def cli(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Cli:
    """``pkgcat`` on the test's database; ``env`` adds variables for one run."""
    monkeypatch.setenv("PKGCAT_DATABASE_URL", database_url)
    runner = CliRunner()

    def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
        return runner.invoke(cli_app, list(args), env=env, catch_exceptions=False)

    return invoke


def listed(cli: Cli, *args: str) -> Any:
    result = cli(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def plain(cli: Cli, *args: str) -> list[list[str]]:
    """The output of a listing that is not on a terminal, split into its fields."""
    result = cli(*args)
    assert result.exit_code == 0, result.output
    return [line.split("\t") for line in result.stdout.splitlines()]


# Listings ---------------------------------------------------------------------------------------


def test_source_list_counts_what_each_source_has(cli: Cli, catalogue: dict[str, str]) -> None:
    sources = {s["name"]: s for s in listed(cli, "source", "list")}
    assert list(sources) == ["Alpha", "Beta"]
    counts = {n: (s["packages"], s["applications"], s["purchases"]) for n, s in sources.items()}
    assert counts == {"Alpha": (4, 2, 4), "Beta": (1, 2, 1)}
    assert sources["Alpha"]["url"] == "https://alpha.example/"


def test_app_list_filters_by_source_and_shows_effective_settings(
    cli: Cli, catalogue: dict[str, str]
) -> None:
    cli("key", "create", "--source", "Beta", "--app", "beta-a")
    apps = listed(cli, "app", "list", "--source", "Beta")
    assert [(a["source"], a["name"]) for a in apps] == [("Beta", "beta-a"), ("Beta", "beta-paris")]
    assert [a["timezone"] for a in apps] == ["UTC", "Europe/Paris"]
    assert [(a["live_keys"], a["keys"]) for a in apps] == [(2, 2), (1, 1)]
    assert len(listed(cli, "app", "list")) == 4
    unknown = cli("app", "list", "--source", "Gamma")
    assert unknown.exit_code == 1
    assert "no source named 'Gamma'" in unknown.stderr


def test_listings_order_names_the_same_way_on_every_backend(cli: Cli) -> None:
    # Case and accents: bytes would put "Zeta" before "alpha", and "Émile" anywhere a
    # collation likes; every backend lists them by name with case folded.
    names = ["Émile", "beta", "alpha", "Zeta", "Alpha"]
    expected = ["Alpha", "alpha", "beta", "Zeta", "Émile"]
    for n, name in enumerate(names):
        assert cli("source", "add", name, "--url", f"https://s{n}.example/").exit_code == 0
    for name in names:
        assert cli("app", "create", "--source", "beta", "--name", name).exit_code == 0
    assert [s["name"] for s in listed(cli, "source", "list")] == expected
    assert [a["name"] for a in listed(cli, "app", "list")] == expected
    assert [k["application"] for k in listed(cli, "key", "list")] == expected
    unknown = cli("source", "delete", "Gamma")
    assert unknown.exit_code == 1
    assert f"known sources: {', '.join(expected)}" in unknown.stderr


@pytest.mark.parametrize("listing", LISTINGS, ids=" ".join)
def test_plain_output_is_a_header_then_the_json_rows(
    cli: Cli, catalogue: dict[str, str], listing: tuple[str, str]
) -> None:
    records = listed(cli, *listing)
    lines = plain(cli, *listing)
    assert lines[0] == list(records[0])
    assert lines[1:] == [["" if v is None else str(v) for v in r.values()] for r in records]


# Deletes ----------------------------------------------------------------------------------------


def test_a_source_with_dependants_is_kept_and_they_are_named(
    cli: Cli, catalogue: dict[str, str]
) -> None:
    refused = cli("source", "delete", "Alpha")
    assert refused.exit_code == 1
    assert (
        "source 'Alpha' has 2 applications, 2 secret keys, 4 packages and 4 purchases;"
        in refused.stderr
    )
    assert "--cascade" in refused.stderr
    assert [s["name"] for s in listed(cli, "source", "list")] == ["Alpha", "Beta"]
    assert len(listed(cli, "key", "list")) == 4


def test_a_cascade_takes_the_source_whole_and_servers_stop_serving_it(cli: Cli, api: Api) -> None:
    assert api.get(DETAILS, api.keys["alpha-a"], package="com.alpha.paid").json()["code"] == 0
    done = cli("source", "delete", "Alpha", "--cascade")
    assert done.exit_code == 0, done.output
    # The request just made was counted: its day of usage goes with the application.
    assert done.stdout.strip() == (
        "deleted source 'Alpha', with 2 applications, 2 secret keys, 1 day of usage, "
        "4 packages and 4 purchases"
    )
    # The running app dropped what it had cached: Alpha's key is unknown now (code 5).
    assert api.get(USAGE, api.keys["alpha-a"]).json()["code"] == 5
    beta = api.get(DETAILS, api.keys["beta-a"], package="com.beta.paid").json()
    assert beta["code"] == 0
    assert [
        (s["name"], s["packages"], s["applications"], s["purchases"])
        for s in listed(cli, "source", "list")
    ] == [("Beta", 1, 2, 1)]
    assert {k["source"] for k in listed(cli, "key", "list")} == {"Beta"}


def test_an_empty_source_is_deleted_without_cascade(cli: Cli, database_url: str) -> None:
    assert cli("source", "add", "Gamma", "--url", "https://gamma.example/").exit_code == 0
    done = cli("source", "delete", "Gamma")
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == "deleted source 'Gamma'"
    assert listed(cli, "source", "list") == []
    missing = cli("source", "delete", "Gamma")
    assert missing.exit_code == 1
    assert "no source named 'Gamma'" in missing.stderr


def test_an_application_with_keys_and_usage_needs_cascade(
    cli: Cli, api: Api, admin: CatalogueAdmin, database_url: str
) -> None:
    admin.load(usage=[(1, date(2024, 3, d), 5) for d in (1, 2, 3)])
    refused = cli("app", "delete", "--source", "Alpha", "--app", "alpha-a")
    assert refused.exit_code == 1
    assert "application 'alpha-a' of 'Alpha' has 1 secret key and 3 days of usage;" in (
        refused.stderr
    )
    assert stored_count(database_url, 1) == 15
    assert api.get(USAGE, api.keys["alpha-a"]).json()["code"] == 0

    done = cli("app", "delete", "--source", "Alpha", "--app", "alpha-a", "--cascade")
    assert done.exit_code == 0, done.output
    # With the day of the request above (the test clock's today).
    assert "with 1 secret key and 4 days of usage" in done.stdout
    assert stored_count(database_url, 1) == 0
    assert [a["name"] for a in listed(cli, "app", "list", "--source", "Alpha")] == ["alpha-b"]
    assert api.get(USAGE, api.keys["alpha-a"]).json()["code"] == 5
    assert api.get(USAGE, api.keys["alpha-b"]).json()["code"] == 0


def test_an_application_without_keys_is_deleted_without_cascade(
    cli: Cli, catalogue: dict[str, str]
) -> None:
    prefix = catalogue["beta-a"][:12]
    assert cli("key", "revoke", prefix).exit_code == 0
    assert cli("key", "delete", prefix).exit_code == 0
    done = cli("app", "delete", "--source", "Beta", "--app", "beta-a")
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == "deleted application 'beta-a' of 'Beta'"
    missing = cli("app", "delete", "--source", "Beta", "--app", "beta-a")
    assert missing.exit_code == 1
    assert "source 'Beta' has no application named 'beta-a'" in missing.stderr


def write_at_once(database_url: str, statement: str) -> str:
    """``statement`` from another connection that waits for no lock: what became of it."""
    engine = engine_for(database_url)
    try:
        with engine.begin() as db:
            if db.dialect.name == "sqlite":
                db.exec_driver_sql("PRAGMA busy_timeout=0")
            else:
                db.exec_driver_sql("SET LOCAL lock_timeout = '10ms'")
            db.execute(text(statement))
        return "written"
    except OperationalError:
        return "kept out"  # a lock it would have had to wait for
    except IntegrityError:
        return "refused"  # what it refers to is gone
    finally:
        engine.dispose()


@pytest.mark.parametrize("kind", ["source", "app"])
def test_a_dependant_added_while_a_delete_runs_never_goes_with_it(
    admin: CatalogueAdmin, database_url: str, kind: str
) -> None:
    """Another writer adds an application (a key) just as the delete of its source (app) starts."""
    admin.add_source("Gamma", "https://gamma.example/")
    if kind == "source":
        added = "INSERT INTO applications (source_id, name, created_at) VALUES ({id}, 'late', 0)"
        target = admin.list_sources()[0].id

        def remove() -> object:
            return admin.delete_source("Gamma")
    else:
        issued = admin.create_application("Gamma", "tool")
        admin.revoke_key(issued.prefix)
        admin.delete_key(issued.prefix)  # the application has nothing left
        added = (
            "INSERT INTO secret_keys (application_id, key_hash, prefix, created_at)"
            " VALUES ({id}, 'late-hash', 'pkc_late0000', 0)"
        )
        target = issued.application.id

        def remove() -> object:
            return admin.delete_application("Gamma", "tool")

    outcomes: list[str] = []

    def meanwhile(_db: object, _cursor: object, statement: str, *_: object) -> None:
        if statement.lstrip().upper().startswith("DELETE") and not outcomes:
            outcomes.append(write_at_once(database_url, added.format(id=target)))

    event.listen(admin.engine, "before_cursor_execute", meanwhile)
    try:
        remove()
    finally:
        event.remove(admin.engine, "before_cursor_execute", meanwhile)
    # The delete held its lock from its count on: the other writer would have waited
    # for it (here it cannot: it runs in the delete's own thread), then found it gone.
    assert outcomes == ["kept out"]
    assert write_at_once(database_url, added.format(id=target)) == "refused"


# Keys -------------------------------------------------------------------------------------------


def test_revoking_a_revoked_key_says_when_and_succeeds(cli: Cli, catalogue: dict[str, str]) -> None:
    prefix = catalogue["alpha-a"][:12]
    first = cli("key", "revoke", prefix)
    assert first.exit_code == 0
    assert first.stdout.strip() == f"revoked {prefix} of 'alpha-a' (Alpha)"
    (revoked_at,) = [k["revoked_at"] for k in listed(cli, "key", "list") if k["prefix"] == prefix]
    again = cli("key", "revoke", prefix)
    assert again.exit_code == 0
    assert again.stdout.strip() == (
        f"{prefix} of 'alpha-a' (Alpha) was already revoked at {revoked_at}; nothing changed"
    )
    assert [k["revoked_at"] for k in listed(cli, "key", "list") if k["prefix"] == prefix] == [
        revoked_at
    ]


def test_only_a_revoked_key_is_deleted(cli: Cli, api: Api) -> None:
    prefix = api.keys["alpha-a"][:12]
    live = cli("key", "delete", prefix)
    assert live.exit_code == 1
    assert f"is live; revoke it first with 'pkgcat key revoke {prefix}'" in live.stderr
    assert api.get(USAGE, api.keys["alpha-a"]).json()["code"] == 0
    assert cli("key", "revoke", prefix).exit_code == 0
    done = cli("key", "delete", prefix)
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith(f"deleted {prefix} of 'alpha-a' (Alpha), revoked at ")
    assert prefix not in {k["prefix"] for k in listed(cli, "key", "list")}
    assert api.get(USAGE, api.keys["alpha-a"]).json()["code"] == 5
    gone = cli("key", "delete", prefix)
    assert gone.exit_code == 1
    assert f"no key starts with {prefix!r}" in gone.stderr


# Nothing is cut ---------------------------------------------------------------------------------

LONG_SOURCE = "Source " + "with-a-very-long-name-" * 8  # 183 characters (the column holds 200)
LONG_APP = "application-whose-name-is-longer-than-any-terminal-column-" * 2


@pytest.fixture
def long_names(cli: Cli) -> str:
    """A source and an application with very long names; returns the key's display prefix."""
    assert cli("source", "add", LONG_SOURCE, "--url", "https://long.example/").exit_code == 0
    created = cli("app", "create", "--source", LONG_SOURCE, "--name", LONG_APP, "--json")
    assert created.exit_code == 0, created.output
    prefix: str = json.loads(created.stdout)["secret_key"][:12]
    return prefix


@pytest.mark.parametrize("listing", LISTINGS, ids=" ".join)
def test_piped_listings_print_long_names_whole_on_one_line(
    cli: Cli, long_names: str, listing: tuple[str, str]
) -> None:
    (header, row) = plain(cli, *listing)
    assert LONG_SOURCE in row
    if listing != ("source", "list"):
        assert LONG_APP in row
    if listing == ("key", "list"):
        assert row[0] == long_names
    assert len(row) == len(header)


@pytest.mark.parametrize("listing", LISTINGS, ids=" ".join)
def test_a_narrow_terminal_gets_a_table_with_every_name_whole(
    cli: Cli, long_names: str, listing: tuple[str, str]
) -> None:
    result = cli(*listing, env={"TTY_COMPATIBLE": "1", "COLUMNS": "40"})
    assert result.exit_code == 0, result.output
    shown = ANSI.sub("", result.stdout)
    assert "\t" not in shown  # a table, not the plain lines
    assert LONG_SOURCE in shown
    assert "…" not in shown
    if listing != ("source", "list"):
        assert LONG_APP in shown
    if listing == ("key", "list"):
        assert long_names in shown


def test_separators_inside_values_are_escaped_in_plain_output(cli: Cli) -> None:
    assert cli("source", "add", "Tab\there\\", "--url", "https://tab.example/").exit_code == 0
    (_, row) = plain(cli, "source", "list")
    assert row[1] == "Tab\\there\\\\"


def test_listings_show_control_characters_and_defuse_formulas(
    cli: Cli, admin: CatalogueAdmin
) -> None:
    admin.load(
        sources=[
            f.source(1, "=cmd|' /C calc'!A0", label="\x1b]2;owned\x07", url="https://e.example/")
        ]
    )
    (_, row) = plain(cli, "source", "list")
    assert row[1:3] == ["'=cmd|' /C calc'!A0", "\\x1b]2;owned\\x07"]
    result = cli("source", "list", env={"TTY_COMPATIBLE": "1", "COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    shown = ANSI.sub("", result.stdout)
    assert "\x1b" not in shown
    assert "\\x1b]2;owned\\x07" in shown


# One engine a command ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("source", "list"),
        ("key", "list"),
        ("repo", "key", "create"),
        ("repo", "key", "list"),
        ("repo", "key", "export"),
        ("migrate",),
        ("publish", "DEB", "--source", "Alpha"),
    ],
    ids=" ".join,
)
def test_a_command_opens_one_engine_for_its_checks_migrations_and_work(
    cli: Cli, catalogue: dict[str, str], tmp_path: Path, args: tuple[str, ...]
) -> None:
    """The revision check, the migration and the command's own work share one connection pool."""
    engines: set[int] = set()

    def seen(connection: Connection) -> None:
        engines.add(id(connection.engine))

    if "DEB" in args:
        args = tuple(str(build_deb(tmp_path)) if a == "DEB" else a for a in args)
    env = {"PKGCAT_REPOSITORY_PASSPHRASE": "one engine, one pool, one passphrase"}
    assert cli("repo", "key", "create", env=env).exit_code == 0
    event.listen(Engine, "engine_connect", seen)
    try:
        result = cli(*args, env=env | {"PKGCAT_BLOB_DIR": str(tmp_path / "blobs")})
    finally:
        event.remove(Engine, "engine_connect", seen)
    assert result.exit_code == 0, result.output
    assert len(engines) == 1
