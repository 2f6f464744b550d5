"""The documentation stays true to the code: settings, error codes, CLI commands, quick start."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pkgcat.cli import command_tree
from pkgcat.config import Settings
from pkgcat.errors import ERROR_TABLE, ApiError
from pkgcat.http.operations import BY_PATH
from pkgcat.http.routes import ROUTES, WRITE_ROUTES

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def table_rows(text: str) -> list[list[str]]:
    """The cells of every Markdown table row, stripped (separator rows left out)."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("|") or re.fullmatch(r"\|[\s|:-]+\|", line):
            continue
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def sections(text: str, level: str = "##") -> dict[str, str]:
    """Each heading of ``level`` (its text) to the body below it, up to the next such heading."""
    found: dict[str, str] = {}
    parts = re.split(rf"^{level} (.+)$", text, flags=re.MULTILINE)
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        found[heading.strip()] = body
    return found


def cli_commands() -> dict[str, list[str]]:
    """Every leaf command of ``pkgcat`` ("key revoke", ...) to its long options."""
    commands: dict[str, list[str]] = {}

    def walk(command: object, path: tuple[str, ...]) -> None:
        children = getattr(command, "commands", None)
        if isinstance(children, dict) and children:
            for name, child in children.items():
                walk(child, (*path, name))
            return
        options: list[str] = []
        for param in getattr(command, "params", []):
            if getattr(param, "param_type_name", None) != "option":
                continue
            names = [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]
            options += [n for n in names if n.startswith("--") and n != "--help"]
        commands[" ".join(path)] = options

    walk(command_tree(), ())
    return commands


COMMANDS = cli_commands()


# Configuration -------------------------------------------------------------------------------


@pytest.mark.parametrize("field", list(Settings.model_fields))
def test_every_setting_is_documented_with_its_default(field: str) -> None:
    variable = f"PKGCAT_{field.upper()}"
    rows = [row for row in table_rows(read(DOCS / "configuration.md")) if row[0] == f"`{variable}`"]
    assert rows, f"{variable} has no row in docs/configuration.md"
    default = Settings.model_fields[field].default
    assert rows[0][1] == f"`{default}`", f"{variable}: the documented default is not {default!r}"


# API --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("error", ERROR_TABLE, ids=lambda e: f"code-{e.code}")
def test_every_error_code_has_a_table_row_with_its_status(error: type[ApiError]) -> None:
    rows = table_rows(read(DOCS / "api.md"))
    code, status = str(error.code), str(error.status)
    assert any(row[0] == code and status in row[1:] for row in rows), (
        f"docs/api.md has no table row for code {code} with HTTP status {status}"
    )


@pytest.mark.parametrize("path", sorted([*ROUTES, *WRITE_ROUTES]))
def test_every_operation_is_documented(path: str) -> None:
    assert f"`{BY_PATH[path].method} {path}`" in read(DOCS / "api.md")


def test_the_conditional_requests_name_the_operations_that_carry_an_etag() -> None:
    text = read(DOCS / "api.md")
    names = {row[1].strip("`"): row[0].lower() for row in table_rows(text) if len(row) == 3}
    listed = re.search(r"own\): (.*?)\. Send it back", " ".join(text.split()))
    assert listed is not None, "docs/api.md's conditional requests list no operations"
    named = set(re.split(r", | and ", re.sub(r" \(.*?\)", "", listed.group(1))))
    assert named == {names[path] for path in ROUTES if BY_PATH[path].etag}


def test_the_metrics_name_every_operation_as_the_table_does() -> None:
    metrics = sections(read(DOCS / "operators.md"), "###")["The metrics"]
    for path in [*ROUTES, *WRITE_ROUTES]:
        assert f"`{BY_PATH[path].name}`" in metrics, BY_PATH[path].name


def test_no_page_says_the_server_writes_no_access_log() -> None:
    assert Settings.model_fields["access_log"].default is True  # one line per request, by default
    for page in sorted(DOCS.glob("*.md")):
        assert "writes no access log" not in " ".join(read(page).split()), page.name


# CLI --------------------------------------------------------------------------------------------


def test_the_command_tree_was_found() -> None:
    assert {"serve", "init", "migrate", "demo", "key revoke"} <= set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_and_its_options_are_documented(command: str) -> None:
    text = read(DOCS / "cli.md")
    section = sections(text).get(f"`pkgcat {command}`")
    assert section is not None, f"docs/cli.md has no section '## `pkgcat {command}`'"
    for option in COMMANDS[command]:
        assert f"`{option}`" in section, f"`{option}` of 'pkgcat {command}' is not in its section"


# README -----------------------------------------------------------------------------------------


def test_the_quick_start_is_make_run_then_make_test() -> None:
    quick_start = sections(read(ROOT / "README.md")).get("Quick start")
    assert quick_start is not None, "README.md has no '## Quick start'"
    block = re.search(r"```\w*\n(.*?)```", quick_start, flags=re.DOTALL)
    assert block is not None, "the quick start has no code block"
    commands = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    assert [c for c in commands if c] == ["make run", "make test"]


def test_the_readme_links_resolve() -> None:
    for target in re.findall(r"\]\(([^)#]+\.md)\)", read(ROOT / "README.md")):
        assert (ROOT / target).is_file(), f"README.md links to a missing {target}"
