"""What every command shares: settings, a migrated database, one way to fail."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import orjson
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from pkgcat.config import Settings
from pkgcat.storage.admin import AdminError, CatalogueAdmin
from pkgcat.storage.migrate import upgrade

stdout = Console()
stderr = Console(stderr=True)


def fail(message: str, code: int = 1) -> NoReturn:
    """One clear line on stderr, then exit with ``code``."""
    stderr.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment, with command-line overrides that were given."""
    given: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**given)
    except ValidationError as error:
        problems = "; ".join(
            f"PKGCAT_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}"
            for e in error.errors()
        )
        fail(problems, 2)


def migrated(settings: Settings) -> Settings:
    """Bring the database to the current schema (every command that touches it does)."""
    try:
        upgrade(settings.database_url)
    except Exception as error:  # the driver's own message names the file or server
        fail(f"cannot migrate {shown_url(settings.database_url)}: {error}")
    return settings


def shown_url(database_url: str) -> str:
    """A database URL fit for a terminal or a log: any password masked."""
    try:
        return make_url(database_url).render_as_string(hide_password=True)
    except ArgumentError:
        return "(an unreadable PKGCAT_DATABASE_URL)"


@contextmanager
def admin() -> Iterator[CatalogueAdmin]:
    """The operator's handle on a migrated database; admin errors become one line."""
    settings = migrated(load_settings())
    handle = CatalogueAdmin(settings.database_url)
    try:
        yield handle
    except AdminError as error:
        fail(str(error))
    finally:
        handle.close()


def print_json(value: object) -> None:
    """One JSON document on stdout, nothing else."""
    typer.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())
