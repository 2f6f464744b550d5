"""docs/client.md kept honest: every public name, every option and every exit code is in it."""

from __future__ import annotations

import re
from pathlib import Path

import pkgcat.client
from pkgcat.cli import command_tree
from pkgcat.cli.client import EXIT_CODES, EXIT_USAGE

DOC = (Path(__file__).parents[2] / "docs" / "client.md").read_text()


def test_every_public_name_is_documented() -> None:
    assert [n for n in pkgcat.client.__all__ if f"`{n}" not in DOC] == []


def test_every_option_of_every_command_is_documented() -> None:
    group = command_tree().commands["client"]
    for name, command in group.commands.items():
        assert f"pkgcat client {name}" in DOC
        for param in command.params:
            for option in param.opts:
                if option.startswith("--") and option != "--help":
                    assert f"`{option}" in DOC or f"[{option}" in DOC, (name, option)


def test_the_exit_code_table_is_the_codes_of_the_command() -> None:
    rows = dict(re.findall(r"^\| (\d+) \| (.+?) \|$", DOC, flags=re.MULTILINE))
    assert rows["0"] == "success"
    assert rows[str(EXIT_USAGE)].startswith("usage error")
    for kind, code in EXIT_CODES:
        assert kind.__name__ in rows[str(code)], (kind.__name__, code)
    assert len(rows) == len(EXIT_CODES) + 3
