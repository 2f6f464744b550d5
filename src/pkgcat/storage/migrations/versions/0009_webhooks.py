"""signed webhooks: the outbox of events, the endpoints that hear them, each attempt

webhook_events is the outbox: one row per event (a sale recorded, refunded or
charged back; a package published or updated), written in the transaction of
the change itself, so a rolled-back change leaves no event. ``seq`` orders
them; writers on PostgreSQL take a transaction lock before their first event,
so events become visible in ``seq`` order and a delivery cursor never passes
an event still uncommitted.

webhook_endpoints holds each application's receivers: the address, the event
types wanted, the signing secret sealed with PKGCAT_WEBHOOK_PASSPHRASE (and the
previous one during a roll), and the delivery state: the cursor (``position``,
the last event handled), the next attempt, since when it fails, and the lease
of the deliverer working on it.

webhook_attempts logs each delivery attempt: time, status, duration and the
first bytes of the answer.

Revision ID: 0009
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None

SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "webhook_events",
        sa.Column("seq", SEQ, nullable=False, autoincrement=True),
        sa.Column("event_id", sa.String(length=40), nullable=False),
        sa.Column("type", sa.String(length=40), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("event_id", name="uq_webhook_events_event_id"),
    )
    op.create_index("ix_webhook_events_source_seq", "webhook_events", ["source_id", "seq"])
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("endpoint_id", sa.String(length=40), nullable=False),
        sa.Column("application_id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("events", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.Text(), nullable=True),
        sa.Column("sealed_secret", sa.Text(), nullable=False),
        sa.Column("sealed_previous", sa.Text(), nullable=True),
        sa.Column("previous_until", sa.BigInteger(), nullable=True),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("next_attempt_ms", sa.BigInteger(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("failing_since", sa.BigInteger(), nullable=True),
        sa.Column("lease_owner", sa.String(length=40), nullable=True),
        sa.Column("lease_until_ms", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["application_id"], ["applications.id"]),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("endpoint_id", name="uq_webhook_endpoints_endpoint_id"),
    )
    op.create_index("ix_webhook_endpoints_application_id", "webhook_endpoints", ["application_id"])
    op.create_index("ix_webhook_endpoints_source_id", "webhook_endpoints", ["source_id"])
    op.create_table(
        "webhook_attempts",
        sa.Column("id", SEQ, nullable=False, autoincrement=True),
        sa.Column("endpoint_id", sa.Integer(), nullable=False),
        sa.Column("event_id", sa.String(length=40), nullable=False),
        sa.Column("attempted_at", sa.BigInteger(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("response", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["endpoint_id"], ["webhook_endpoints.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_webhook_attempts_endpoint", "webhook_attempts", ["endpoint_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_webhook_attempts_endpoint", table_name="webhook_attempts")
    op.drop_table("webhook_attempts")
    op.drop_index("ix_webhook_endpoints_source_id", table_name="webhook_endpoints")
    op.drop_index("ix_webhook_endpoints_application_id", table_name="webhook_endpoints")
    op.drop_table("webhook_endpoints")
    op.drop_index("ix_webhook_events_source_seq", table_name="webhook_events")
    op.drop_table("webhook_events")
