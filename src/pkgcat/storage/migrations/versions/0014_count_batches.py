"""count batches: each batch of counts a server worker committed on PostgreSQL, by number

A row per batch of counts (API usage, downloads) whose commit may still be in doubt: the
batch's own statement inserts it, in the batch's transaction, so the row exists if and
only if the batch's counts landed. When the reply to a commit is lost (the connection
broke after the statement was sent), the worker's next statement inserts the same key
with ``landed`` false, or finds the batch's own row: either way the batch is settled for
good, since a late arrival of the lost statement then finds its key taken and counts
nothing. Each worker deletes its rows once settled; a worker's last rows, left when it
died, go after a week (pkgcat.storage.postgres.batches). SQLite, whose commit has no reply
to lose, writes none.

Revision ID: 0014
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0012"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "count_batches",
        sa.Column("worker", sa.BigInteger(), nullable=False),
        sa.Column("batch", sa.BigInteger(), nullable=False),
        sa.Column("landed", sa.Boolean(), nullable=False),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("worker", "batch"),
    )


def downgrade() -> None:
    op.drop_table("count_batches")
