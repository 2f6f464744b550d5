"""money: commissions and fees, the sellers' ledger, payouts, refunds

purchases.fee is the payment platform's own fee on a store sale, as the platform
reported it (NULL: not reported, or an imported purchase).

source_money holds what a source's money is subject to: its own commission rate
(NULL: the deployment's) and the account its payouts go to on the platform, with
what the platform last said of it. payout_thresholds holds a source's own least
payout per currency.

ledger_entries is the sellers' ledger, append-only: each row adds to a source's
pending and available balance in one currency (test money apart), and is unique
per kind and reference, so a sale, a release, a refund or a payout is written
once whoever writes it. ledger_holds lists the sales still pending until their
release. payouts holds each payout (one per source, currency and payout date)
and its lease; payout_items the entries each paid (an entry at most once).
store_refunds holds each refund of a store sale.

Amounts are integers in the currency's minor units.

Revision ID: 0018
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0015"
branch_labels: str | None = None
depends_on: str | None = None

_SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
KINDS = "'sale', 'fee', 'release', 'refund', 'chargeback', 'payout', 'payout_failed', 'adjustment'"


def upgrade() -> None:
    # ALTER TABLE ADD COLUMN on both databases: purchases keeps its triggers (0003).
    op.add_column("purchases", sa.Column("fee", sa.String(length=32), nullable=True))
    op.create_table(
        "source_money",
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("commission_percent", sa.String(length=16), nullable=True),
        sa.Column("account_id", sa.String(length=255), nullable=True),
        sa.Column("account_test", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("payouts_enabled", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("details_submitted", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("disabled_reason", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.PrimaryKeyConstraint("source_id"),
    )
    op.create_index("ix_source_money_account", "source_money", ["account_id"])
    op.create_table(
        "payout_thresholds",
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.PrimaryKeyConstraint("source_id", "currency"),
    )
    op.create_table(
        "ledger_entries",
        sa.Column("seq", _SEQ, autoincrement=True, nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("test", sa.Boolean(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("reference", sa.String(length=128), nullable=False),
        sa.Column("pending", sa.BigInteger(), nullable=False),
        sa.Column("available", sa.BigInteger(), nullable=False),
        sa.Column("txn_id", sa.String(length=128), nullable=True),
        sa.Column("payout_id", sa.String(length=40), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.CheckConstraint(f"kind IN ({KINDS})", name="ck_ledger_entries_kind"),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("kind", "reference", name="uq_ledger_entries_kind_reference"),
    )
    op.create_index(
        "ix_ledger_entries_balance", "ledger_entries", ["source_id", "currency", "test"]
    )
    op.create_index("ix_ledger_entries_txn", "ledger_entries", ["txn_id"])
    op.create_table(
        "ledger_holds",
        sa.Column("txn_id", sa.String(length=128), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("test", sa.Boolean(), nullable=False),
        sa.Column("release_at", sa.BigInteger(), nullable=False),
        sa.Column("fee_pending", sa.Boolean(), server_default="0", nullable=False),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.PrimaryKeyConstraint("txn_id"),
    )
    op.create_index("ix_ledger_holds_release_at", "ledger_holds", ["release_at"])
    op.create_table(
        "payouts",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("test", sa.Boolean(), nullable=False),
        sa.Column("period", sa.String(length=10), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("account_id", sa.String(length=255), nullable=False),
        sa.Column("transfer_id", sa.String(length=255), nullable=True),
        sa.Column("platform_payout_id", sa.String(length=255), nullable=True),
        sa.Column("reversal_id", sa.String(length=255), nullable=True),
        sa.Column("failure_code", sa.String(length=64), nullable=True),
        sa.Column("failure_message", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("lease_owner", sa.String(length=40), nullable=True),
        sa.Column("lease_until", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.Column("settled_at", sa.BigInteger(), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'in_transit', 'paid', 'failed')", name="ck_payouts_status"
        ),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("source_id", "currency", "test", "period", name="uq_payouts_period"),
    )
    op.create_index(
        "ix_payouts_source_order",
        "payouts",
        ["source_id", sa.text("created_at DESC"), "id"],
    )
    op.create_index("ix_payouts_status", "payouts", ["status"])
    op.create_table(
        "payout_items",
        sa.Column("entry_seq", _SEQ, nullable=False),
        sa.Column("payout_id", sa.String(length=40), nullable=False),
        sa.ForeignKeyConstraint(["entry_seq"], ["ledger_entries.seq"]),
        sa.ForeignKeyConstraint(["payout_id"], ["payouts.id"]),
        sa.PrimaryKeyConstraint("entry_seq"),
    )
    op.create_index("ix_payout_items_payout_id", "payout_items", ["payout_id"])
    op.create_table(
        "store_refunds",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("txn_id", sa.String(length=128), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("request_key", sa.String(length=255), nullable=True),
        sa.Column("platform_refund_id", sa.String(length=255), nullable=True),
        sa.Column("failure", sa.Text(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.CheckConstraint(
            "status IN ('pending', 'succeeded', 'failed')", name="ck_store_refunds_status"
        ),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("platform_refund_id"),
        sa.UniqueConstraint("source_id", "request_key", name="uq_store_refunds_request"),
    )
    op.create_index("ix_store_refunds_txn_id", "store_refunds", ["txn_id"])


def downgrade() -> None:
    op.drop_table("store_refunds")
    op.drop_table("payout_items")
    op.drop_table("payouts")
    op.drop_table("ledger_holds")
    op.drop_table("ledger_entries")
    op.drop_table("payout_thresholds")
    op.drop_table("source_money")
    op.drop_column("purchases", "fee")
