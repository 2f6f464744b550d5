"""Alembic environment: runs the migrations online, on the caller's connection when it gives one."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from pkgcat.storage.engine import engine_for
from pkgcat.storage.schema import metadata


def run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        # SQLite cannot ALTER most things in place; batch mode rebuilds the table.
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


given = context.config.attributes.get("connection")
if given is not None:
    run(given)
else:
    engine = engine_for(context.config.attributes["database_url"])
    with engine.connect() as connection:
        run(connection)
    engine.dispose()
