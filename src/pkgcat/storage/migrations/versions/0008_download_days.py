"""counted downloads: one row per package and day of whole .deb files served, and their totals

download_days holds, per package identifier and UTC day, how many whole files
of the package the served repository sent (see docs/repository.md for what a
whole file is). Requests' usage counts and downloads are committed in the same
group commit by the server's workers. Rows are keyed by the package's
identifier, which stays the same across imports, so a package removed and
published again keeps its history.

download_totals holds each package's sum of them, kept in the same commit, so
that details reads one row however long the package's history.

It moves no catalogue generation (a download changes nothing the indexes or
the other operations show). On PostgreSQL each changed row sends a
notification on the ``pkgcat_downloads`` channel (one per transaction: equal
notifications of a transaction are delivered once), so the workers that keep
a package's counted total for ``package/details.json`` drop it.

Revision ID: 0008
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None

CHANNEL = "pkgcat_downloads"


def upgrade() -> None:
    op.create_table(
        "download_days",
        sa.Column("package", sa.String(length=255), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("package", "day"),
    )
    op.create_table(
        "download_totals",
        sa.Column("package", sa.String(length=255), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("package"),
    )
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "CREATE FUNCTION notify_downloads() RETURNS trigger AS $$ "
        f"BEGIN PERFORM pg_notify('{CHANNEL}', ''); RETURN NULL; END $$ LANGUAGE plpgsql"
    )
    op.execute(
        "CREATE TRIGGER trg_download_days_notify AFTER INSERT OR UPDATE ON download_days "
        "FOR EACH ROW EXECUTE FUNCTION notify_downloads()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER trg_download_days_notify ON download_days")
        op.execute("DROP FUNCTION notify_downloads()")
    op.drop_table("download_totals")
    op.drop_table("download_days")
