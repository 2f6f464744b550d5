"""seller API 1.1: buyers' devices, usage by operation, the cursor key, the sales ledger

purchases gains the buyer's ``account`` id and device (``udid``,
``device_model``), all optional. Each row with a device registers it in
buyer_devices (one buyer may have several), where a purchase check by device
finds its buyers; changes there move the catalogue generation like changes to
purchases do (SQLite row triggers, PostgreSQL statement triggers that move it
once per transaction, as 0004 made them).

usage_operations splits usage_days by operation; the counters write both in
one commit. Like usage_days, it does not move the generation.

api_secrets holds per-database secrets: ``cursor_key`` is made here, 32
random bytes as hex, so every worker and host of one database signs and
checks list cursors with the same key and no configuration.

New purchase indexes: (source_id, purchased_at DESC, txn_id) for the sales
ledger of both scopes, newest first (the existing source index leads with
allowed_for), and (source_id, nickname) and (source_id, account) for a
purchase check by buyer.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None

BUMP = "UPDATE catalogue_generation SET value = value + 1 WHERE id = 1"
DEVICE_EVENTS = ("INSERT", "UPDATE", "DELETE")
PURCHASE_COLUMNS = ("account", "udid", "device_model")


def _trigger_name(event: str) -> str:
    """Named as migration 0003 names its triggers."""
    return f"trg_buyer_devices_{event.lower()}_generation"


def upgrade() -> None:
    with op.batch_alter_table("purchases") as batch:
        batch.add_column(sa.Column("account", sa.String(length=128), nullable=True))
        batch.add_column(sa.Column("udid", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("device_model", sa.String(length=64), nullable=True))
    op.create_index(
        "ix_purchases_source_sales",
        "purchases",
        ["source_id", sa.text("purchased_at DESC"), "txn_id"],
    )
    op.create_index("ix_purchases_source_nickname", "purchases", ["source_id", "nickname"])
    op.create_index("ix_purchases_source_account", "purchases", ["source_id", "account"])

    op.create_table(
        "buyer_devices",
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("nickname", sa.Text(), nullable=False),
        sa.Column("account", sa.String(length=128), nullable=True),
        sa.Column("udid", sa.String(length=64), nullable=False),
        sa.Column("device_model", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.UniqueConstraint("source_id", "udid", "nickname", name="uq_buyer_devices_key"),
    )
    dialect = op.get_bind().dialect.name
    for event in DEVICE_EVENTS:
        name = _trigger_name(event)
        if dialect == "postgresql":
            op.execute(
                f"CREATE TRIGGER {name} AFTER {event} ON buyer_devices "
                "FOR EACH STATEMENT EXECUTE FUNCTION bump_catalogue_generation()"
            )
        else:
            op.execute(f"CREATE TRIGGER {name} AFTER {event} ON buyer_devices BEGIN {BUMP}; END")

    op.create_table(
        "usage_operations",
        sa.Column("application_id", sa.Integer(), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("operation", sa.String(length=40), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["application_id"], ["applications.id"]),
        sa.PrimaryKeyConstraint("application_id", "day", "operation"),
    )

    api_secrets = op.create_table(
        "api_secrets",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.bulk_insert(api_secrets, [{"name": "cursor_key", "value": secrets.token_hex(32)}])


def downgrade() -> None:
    op.drop_table("api_secrets")
    op.drop_table("usage_operations")
    dialect = op.get_bind().dialect.name
    for event in DEVICE_EVENTS:
        suffix = " ON buyer_devices" if dialect == "postgresql" else ""
        op.execute(f"DROP TRIGGER {_trigger_name(event)}{suffix}")
    op.drop_table("buyer_devices")
    op.drop_index("ix_purchases_source_account", table_name="purchases")
    op.drop_index("ix_purchases_source_nickname", table_name="purchases")
    op.drop_index("ix_purchases_source_sales", table_name="purchases")
    # In place, on SQLite too (3.35 and later): a batch rebuild of purchases would drop the
    # generation triggers migration 0003 put on it.
    for column in PURCHASE_COLUMNS:
        op.execute(f"ALTER TABLE purchases DROP COLUMN {column}")
