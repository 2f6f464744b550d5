"""Many rows through one statement, at the speed of the database driver."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, bindparam, update
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql.dml import UpdateBase


@dataclass(frozen=True, slots=True)
class Prepared:
    """A statement compiled for one dialect, and how to order a row's values for its driver."""

    sql: str
    order: tuple[int, ...] | None
    """Positional parameters: the row's value for each, when not the row as it is."""
    keys: tuple[str, ...] | None
    """Named parameters: the name of each value of a row."""


def prepare(dialect: Dialect, statement: UpdateBase, names: Sequence[str]) -> Prepared:
    """Compile ``statement`` (bound parameters named ``p_<name>``) for rows of ``names``.

    Compiling costs about a millisecond; a statement run many times (an
    import's, once per chunk) is prepared once.
    """
    compiled = statement.compile(dialect=dialect)
    if not compiled.positional:
        return Prepared(str(compiled), None, tuple(f"p_{name}" for name in names))
    where = {f"p_{name}": index for index, name in enumerate(names)}
    # A parameter may appear more than once in the SQL: each place takes its value.
    order = tuple(where[name] for name in compiled.positiontup or ())
    return Prepared(str(compiled), None if order == tuple(range(len(names))) else order, None)


def run(db: Connection, prepared: Prepared, rows: Sequence[tuple[Any, ...]]) -> None:
    """Run ``prepared`` once per row, in one driver call (nothing when there is no row)."""
    if not rows:
        return
    params: list[Any]
    if prepared.keys is not None:
        params = [dict(zip(prepared.keys, row, strict=True)) for row in rows]
    elif prepared.order is not None:
        params = [tuple(row[i] for i in prepared.order) for row in rows]
    else:
        # The driver takes the tuples as they are; a list is how SQLAlchemy knows there are many.
        params = rows if isinstance(rows, list) else list(rows)
    db.exec_driver_sql(prepared.sql, params)


def executemany(
    db: Connection, statement: UpdateBase, names: Sequence[str], rows: list[tuple[Any, ...]]
) -> None:
    """Run ``statement`` (bound parameters named ``p_<name>``) once per row, in one driver call.

    The statement is compiled once for the connection's dialect and handed to
    the driver's ``executemany`` with plain tuples, which costs a fifth of the
    per-row parameter processing of ``Connection.execute``.
    """
    if rows:
        run(db, prepare(db.dialect, statement, names), rows)


def update_rows(
    db: Connection, table: Table, key: str, columns: Sequence[str], rows: list[tuple[Any, ...]]
) -> None:
    """Set ``columns`` of the row whose ``key`` matches, for each row of (*values, key value)."""
    statement = (
        update(table)
        .where(table.c[key] == bindparam(f"p_{key}"))
        .values({column: bindparam(f"p_{column}") for column in columns})
    )
    executemany(db, statement, (*columns, key), rows)
