"""key scopes and idempotency records: the first write operation

secret_keys.scopes names what a key may do, space-separated: every key reads
(``read``, the value every existing key gets, so today's keys stay read-only);
``publish`` lets it upload packages. A later scope is one more name there.

idempotency_records keeps the answer of each write sent with an
``Idempotency-Key``, per application and key, with the SHA-256 of what was
sent: the same key with the same body gets the same answer without a second
write; with another body it is refused. Each record expires (``expires_at``,
Unix seconds) and expired ones are deleted as new ones are written. Neither
change moves the catalogue generation.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # A plain ADD COLUMN on both databases: a batch copy of the table on SQLite would drop
    # the triggers that move the catalogue generation when a key changes (migration 0003).
    op.add_column(
        "secret_keys",
        sa.Column("scopes", sa.Text(), nullable=False, server_default=sa.text("'read'")),
    )
    op.create_table(
        "idempotency_records",
        sa.Column("application_id", sa.Integer(), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=False),
        sa.Column("operation", sa.String(length=64), nullable=False),
        sa.Column("request_sha256", sa.String(length=64), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["application_id"], ["applications.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("application_id", "idempotency_key"),
    )
    op.create_index(
        "ix_idempotency_records_expires_at", "idempotency_records", ["expires_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_idempotency_records_expires_at", table_name="idempotency_records")
    op.drop_table("idempotency_records")
    op.execute("ALTER TABLE secret_keys DROP COLUMN scopes")  # SQLite 3.35 and later, PostgreSQL
