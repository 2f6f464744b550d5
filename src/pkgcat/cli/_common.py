"""What every command shares: settings, a migrated database, one way to fail."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import orjson
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from sqlalchemy import Engine

from pkgcat.cli._failures import database_failure, first_line, shown_url
from pkgcat.cli._safe import visible
from pkgcat.cli._tables import Column, print_rows
from pkgcat.config import Settings
from pkgcat.logs import configure_logging
from pkgcat.storage.admin import AdminError, CatalogueAdmin
from pkgcat.storage.engine import backend_name, engine_for
from pkgcat.storage.migrate import current_revision, upgrade
from pkgcat.storage.sqlite.connection import sqlite_path

T = TypeVar("T")

stdout = Console()
stderr = Console(stderr=True)


def fail(message: str, code: int = 1) -> NoReturn:
    """One clear line on stderr, then exit with ``code``."""
    stderr.print(f"[bold red]error:[/] {escape(visible(message))}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment, with command-line overrides that were given."""
    given: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
    try:
        settings = Settings(**given)
    except ValidationError as error:
        problems = "; ".join(
            # A rule between settings (no location) names its settings itself.
            f"PKGCAT_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}"
            if e["loc"]
            else e["msg"]
            for e in error.errors()
        )
        fail(problems, 2)
    configure_logging(settings)
    return settings


def _sqlite_file(database_url: str) -> Path | None:
    """The file a SQLite URL names (``None`` for other backends, whose server is asked instead)."""
    if backend_name(database_url) != "sqlite":
        return None
    try:
        return Path(sqlite_path(database_url))
    except ValueError:  # in-memory: nothing on disk to look for
        return None


def _step(verb: str, shown: str, step: Callable[[], T]) -> T:
    """``step()``, a database failure in it told as one line and exit code 2."""
    try:
        return step()
    except Exception as error:
        if database_failure(error) is None:
            raise
        fail(f"cannot {verb} {shown}: {first_line(error)}", 2)


def migrated(settings: Settings, *, create: bool = False, engine: Engine | None = None) -> Settings:
    """The database brought to the current schema, for a command about to use it.

    Only the commands that make a catalogue (``init``, ``migrate``, ``demo``)
    pass ``create``: every other command fails in one line, naming the database
    it looked for, rather than start on a new empty one made by mistake (run
    from the wrong folder, the default ``./pkgcat.db`` would be such a file).
    Given the command's ``engine``, every step runs on it.
    """
    shown = shown_url(settings.database_url)
    database: str | Engine = engine if engine is not None else settings.database_url
    if not create:
        file = _sqlite_file(settings.database_url)
        if file is not None and not file.exists():
            fail(
                f"no database at {file.resolve()} ({shown}); create one with `pkgcat init`, "
                "or set PKGCAT_DATABASE_URL to the catalogue's database",
                2,
            )
        if _step("open", shown, lambda: current_revision(database)) is None:
            fail(f"{shown} holds no pkgcat catalogue; `pkgcat init` creates one there", 2)
    _step("migrate", shown, lambda: upgrade(database))
    return settings


@contextmanager
def engine_of(settings: Settings) -> Iterator[Engine]:
    """The command's one engine on the settings' database (one connection pool), closed after."""
    engine = engine_for(settings.database_url)
    try:
        yield engine
    finally:
        engine.dispose()


@contextmanager
def opened(settings: Settings, *, create: bool = False) -> Iterator[Engine]:
    """The command's one engine, on a database :func:`migrated` first through that engine."""
    with engine_of(settings) as engine:
        migrated(settings, create=create, engine=engine)
        yield engine


@contextmanager
def admin(*, create: bool = False) -> Iterator[CatalogueAdmin]:
    """The operator's handle on a migrated database; admin errors become one line."""
    with opened(load_settings(), create=create) as engine:
        handle = CatalogueAdmin(engine)
        try:
            yield handle
        except AdminError as error:
            fail(str(error))
        finally:
            handle.close()


def print_json(value: object) -> None:
    """One JSON document on stdout, nothing else."""
    typer.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())


def print_listing(
    columns: Sequence[Column], records: Sequence[Mapping[str, object]], as_json: bool
) -> None:
    """An admin listing: the records as one JSON list, or as a table or plain lines.

    Each column shows the record's value of the same name: ``--json`` and the plain
    lines' header use the same field names.
    """
    if as_json:
        print_json(records)
        return
    print_rows(columns, [[record[c.field] for c in columns] for record in records])
