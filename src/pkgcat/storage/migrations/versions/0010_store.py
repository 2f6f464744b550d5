"""the store: buyer accounts, their sign-in codes and device tokens, payments

buyers are the store's accounts, one per email address (kept lower-case).

buyer_codes holds the one-time code mailed to an address, by its SHA-256 and
with its expiry: one live code per address (a new one replaces it), deleted
when used.

buyer_tokens holds the sign-in of one device: the SHA-256 of its token and of
its payment secret (never the values), the buyer and the device (UDID and
model) it was issued to, and when it was revoked (sign-out or the operator).

store_payments holds each payment the store started: buyer, device, what it
buys (one package or a whole source), amount, the platform and its reference,
and its state (open, completed, failed). A completed payment has written its
purchases row in the same transaction, never before.

store_events holds the id of each payment platform event applied, written in
the transaction that applies it: an event told again changes nothing.

Revision ID: 0010
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "buyers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("email", name="uq_buyers_email"),
    )
    op.create_table(
        "buyer_codes",
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("email"),
    )
    op.create_table(
        "buyer_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("buyer_id", sa.Integer(), nullable=False),
        sa.Column("udid", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("revoked_at", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["buyer_id"], ["buyers.id"]),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_buyer_tokens_buyer_id", "buyer_tokens", ["buyer_id"])
    op.create_table(
        "store_payments",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("buyer_id", sa.Integer(), nullable=False),
        sa.Column("udid", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=64), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("package_id", sa.Integer(), nullable=True),
        sa.Column("amount", sa.String(length=32), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("completed_at", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["buyer_id"], ["buyers.id"]),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.ForeignKeyConstraint(["package_id"], ["packages.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_store_payments_buyer_id", "store_payments", ["buyer_id"])
    op.create_table(
        "store_events",
        sa.Column("event_id", sa.String(length=255), nullable=False),
        sa.Column("applied_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("event_id"),
    )


def downgrade() -> None:
    op.drop_table("store_events")
    op.drop_index("ix_store_payments_buyer_id", table_name="store_payments")
    op.drop_table("store_payments")
    op.drop_index("ix_buyer_tokens_buyer_id", table_name="buyer_tokens")
    op.drop_table("buyer_tokens")
    op.drop_table("buyer_codes")
    op.drop_table("buyers")
