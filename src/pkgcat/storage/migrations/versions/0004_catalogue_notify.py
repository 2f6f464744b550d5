"""catalogue generation changes pushed to listeners (PostgreSQL)

On PostgreSQL, every change of the catalogue generation sends a NOTIFY on
the ``pkgcat_catalogue`` channel with the new value, delivered when the
changing transaction commits: each server worker listens and drops its
caches, instead of reading the generation on every request. SQLite has no
such channel (its workers read the generation in process); nothing changes
there.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
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
