"""The options every ``pkgcat client`` command shares: each command takes them, after its arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pkgcat.cli import command_tree
from tests.client.conftest import KEY, Double, answer, invoke

DEB = "FILE"
"""Stands for a file to upload (any file: the double answers before anything reads it)."""

COMMANDS: dict[str, tuple[list[str], set[str]]] = {
    "usage": ([], {"--format", "--json", "--csv"}),
    "downloads": (["com.x"], {"--format", "--json", "--csv"}),
    "package": (["com.x"], {"--format", "--json"}),
    "upload": ([DEB], {"--format", "--json"}),
    "buyers": (["com.x"], {"--format", "--json", "--csv"}),
    "packages": ([], {"--format", "--json", "--csv"}),
    "check": (["com.x", "--nickname", "n"], {"--format", "--json", "--csv"}),
    "sales": ([], {"--format", "--json", "--csv"}),
    "webhook create": (["--url", "https://h.example/in", "--events", "sale.completed"], {"--json"}),
    "webhook list": ([], {"--json"}),
    "webhook update": (["we_1", "--disable"], {"--json"}),
    "webhook delete": (["we_1"], {"--json"}),
    "webhook roll-secret": (["we_1"], {"--json"}),
    "webhook deliveries": (["we_1"], {"--json"}),
    "webhook redeliver": (["we_1", "--event", "evt_1"], {"--json"}),
    "webhook test": (["we_1", "--event-type", "sale.completed"], {"--json"}),
    "money balance": ([], {"--json"}),
    "money payouts": ([], {"--json"}),
    "money refund": (["test_txn_1", "--amount", "1.00"], {"--json"}),
    "whitelist list": (["com.x"], {"--json"}),
    "whitelist add": (["com.x", "00008030-001A2D3E0C42802E"], {"--json"}),
    "whitelist remove": (["com.x", "00008030-001A2D3E0C42802E"], {"--json"}),
}
"""Each command with the least it needs, and the output options it takes."""


def _commands(group: Any, path: str = "") -> list[str]:
    found: list[str] = []
    for name, command in group.commands.items():
        here = f"{path} {name}".strip()
        found += _commands(command, here) if hasattr(command, "commands") else [here]
    return found


def _args(command: str, tmp_path: Path) -> list[str]:
    deb = tmp_path / "x.deb"
    deb.write_bytes(b"!<arch>\n")
    return [*command.split(), *(str(deb) if a == DEB else a for a in COMMANDS[command][0])]


def test_the_table_holds_every_command() -> None:
    assert sorted(_commands(command_tree().commands["client"])) == sorted(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_sends_as_its_shared_options_say(command: str, tmp_path: Path) -> None:
    double = Double(answer(15, "internal error"))
    shared = ["--base-url", "http://elsewhere.test/api", "--key-in", "query", "--retries", "0"]
    result = invoke(
        double.transport, KEY, *_args(command, tmp_path), *shared, "--tz", "Asia/Tokyo", "--json"
    )
    assert result.exit_code == 8, result.output  # the server's error: every option was taken
    (sent,) = double.requests  # no retry
    assert (sent.url.host, sent.url.path.split("/")[1]) == ("elsewhere.test", "api")
    assert sent.url.params["secret_key"] == KEY
    assert "authorization" not in sent.headers


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ["--tz", "Mars/Olympus"],
            "--tz: 'Mars/Olympus' is not an IANA time zone (e.g. UTC, Europe/Paris)",
        ),
        (["--key-in", "cookie"], "--key-in: 'cookie'; use header or query"),
    ],
)
def test_every_command_refuses_a_bad_shared_option_before_any_request(
    command: str, options: list[str], message: str, tmp_path: Path
) -> None:
    double = Double(answer(0, {}))
    result = invoke(double.transport, KEY, *_args(command, tmp_path), *options)
    assert result.exit_code == 2
    assert result.stderr == f"error: {message}\n"
    assert double.requests == []


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("flag", ["--format", "--csv"])
def test_every_command_takes_its_output_options_and_no_other(
    command: str, flag: str, tmp_path: Path
) -> None:
    double = Double(answer(0, {}))
    given = [flag, "json"] if flag == "--format" else [flag]
    result = invoke(double.transport, KEY, *_args(command, tmp_path), *given, "--json")
    assert result.exit_code == 2
    if flag in COMMANDS[command][1]:
        both = "--format and --json" if flag == "--format" else "--json and --csv"
        assert result.stderr == f"error: {both}: choose one\n"
    else:
        assert f"No such option: {flag}" in result.stderr
    assert double.requests == []
