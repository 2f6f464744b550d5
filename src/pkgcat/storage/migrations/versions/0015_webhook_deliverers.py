"""webhook deliverers: who delivers, alive while their heartbeats come

One row per running deliverer (a thread of each server worker, or `pkgcat deliver`): its
lease owner id, host name, process id and senders, and until when its last heartbeat keeps
it alive, in the database's clock. A deliverer claims its fair share of the endpoints with
work, weighed by its senders among those of every deliverer alive, so delivery spreads
over every worker of every host; its heartbeat also renews the leases it holds.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "webhook_deliverers",
        sa.Column("owner", sa.String(length=40), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("senders", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.BigInteger(), nullable=False),
        sa.Column("alive_until_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("owner"),
    )


def downgrade() -> None:
    op.drop_table("webhook_deliverers")
