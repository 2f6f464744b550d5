"""Alembic environment: runs the migrations online against the configured URL."""

from __future__ import annotations

from alembic import context

from pkgcat.storage.engine import engine_for
from pkgcat.storage.schema import metadata

url = context.config.attributes["database_url"]
engine = engine_for(url)
with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        # SQLite cannot ALTER most things in place; batch mode rebuilds the table.
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
engine.dispose()
