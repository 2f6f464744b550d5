"""catalogue generation: moved once per transaction, and pushed to listeners (PostgreSQL)

On PostgreSQL, every change of the catalogue generation sends a NOTIFY on
the ``pkgcat_catalogue`` channel with the new value, delivered when the
changing transaction commits: each server worker listens and drops its
caches, instead of reading the generation on every request.

The statement triggers of 0003 also move the generation once per transaction
from now on, not once per statement: a transaction's changes become visible
together, so one step covers them all, and an import that writes row by row
(one statement each through the driver's executemany) no longer updates the
one generation row and queues a notification tens of thousands of times.

SQLite has no such channel (its workers read the generation in process) and
its row triggers stay as they are: nothing changes there.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

BUMP = "UPDATE catalogue_generation SET value = value + 1 WHERE id = 1"
MOVED = "pkgcat.catalogue_generation_moved"
"""A setting local to the transaction: set once the generation has moved in it."""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "CREATE OR REPLACE FUNCTION bump_catalogue_generation() RETURNS trigger AS $$ BEGIN "
        f"IF current_setting('{MOVED}', true) IS DISTINCT FROM 'yes' THEN "
        f"{BUMP}; PERFORM set_config('{MOVED}', 'yes', true); "
        "END IF; RETURN NULL; END $$ LANGUAGE plpgsql"
    )
    op.execute(
        "CREATE FUNCTION notify_catalogue_generation() RETURNS trigger AS $$ "
        "BEGIN PERFORM pg_notify('pkgcat_catalogue', NEW.value::text); RETURN NULL; END $$ "
        "LANGUAGE plpgsql"
    )
    op.execute(
        "CREATE TRIGGER trg_catalogue_generation_notify AFTER UPDATE ON catalogue_generation "
        "FOR EACH ROW EXECUTE FUNCTION notify_catalogue_generation()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER trg_catalogue_generation_notify ON catalogue_generation")
    op.execute("DROP FUNCTION notify_catalogue_generation()")
    op.execute(
        "CREATE OR REPLACE FUNCTION bump_catalogue_generation() RETURNS trigger AS $$ "
        f"BEGIN {BUMP}; RETURN NULL; END $$ LANGUAGE plpgsql"
    )
