"""catalogue generation and newest-first buyer indexes

catalogue_generation holds one number that every change to what the request
path reads (sources, applications, keys other than their last-used time,
packages, purchases) increments, through triggers: the server's caches compare
it instead of being told. Usage counts do not touch it, so many workers'
counting leaves each other's caches warm.

The purchase indexes are rebuilt newest first (purchased_at DESC, txn_id), the
order the buyers operation reads, so a page is a plain index range.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None

# (table, events) whose changes the request path must see.
WATCHED = (
    ("sources", ("INSERT", "UPDATE", "DELETE")),
    ("applications", ("INSERT", "UPDATE", "DELETE")),
    ("packages", ("INSERT", "UPDATE", "DELETE")),
    ("purchases", ("INSERT", "UPDATE", "DELETE")),
    # A key's last-used time is the server's own write: it must not empty the caches.
    ("secret_keys", ("INSERT", "UPDATE OF application_id, key_hash, revoked_at", "DELETE")),
)
BUMP = "UPDATE catalogue_generation SET value = value + 1 WHERE id = 1"


def _trigger_name(table: str, event: str) -> str:
    return f"trg_{table}_{event.split()[0].lower()}_generation"


def upgrade() -> None:
    op.create_table(
        "catalogue_generation",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("id = 1", name="ck_catalogue_generation_one_row"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.execute("INSERT INTO catalogue_generation (id, value) VALUES (1, 0)")
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute(
            "CREATE FUNCTION bump_catalogue_generation() RETURNS trigger AS $$ "
            f"BEGIN {BUMP}; RETURN NULL; END $$ LANGUAGE plpgsql"
        )
    for table, events in WATCHED:
        for event in events:
            name = _trigger_name(table, event)
            if dialect == "postgresql":
                op.execute(
                    f"CREATE TRIGGER {name} AFTER {event} ON {table} "
                    "FOR EACH STATEMENT EXECUTE FUNCTION bump_catalogue_generation()"
                )
            else:
                op.execute(f"CREATE TRIGGER {name} AFTER {event} ON {table} BEGIN {BUMP}; END")

    with op.batch_alter_table("purchases") as batch:
        batch.drop_index("ix_purchases_package_order")
        batch.drop_index("ix_purchases_source_order")
    op.create_index(
        "ix_purchases_package_order",
        "purchases",
        ["package_id", sa.text("purchased_at DESC"), "txn_id"],
    )
    op.create_index(
        "ix_purchases_source_order",
        "purchases",
        ["source_id", "allowed_for", sa.text("purchased_at DESC"), "txn_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_purchases_package_order", table_name="purchases")
    op.drop_index("ix_purchases_source_order", table_name="purchases")
    op.create_index(
        "ix_purchases_package_order", "purchases", ["package_id", "purchased_at", "txn_id"]
    )
    op.create_index(
        "ix_purchases_source_order",
        "purchases",
        ["source_id", "allowed_for", "purchased_at", "txn_id"],
    )
    dialect = op.get_bind().dialect.name
    for table, events in WATCHED:
        for event in events:
            name = _trigger_name(table, event)
            suffix = f" ON {table}" if dialect == "postgresql" else ""
            op.execute(f"DROP TRIGGER {name}{suffix}")
    if dialect == "postgresql":
        op.execute("DROP FUNCTION bump_catalogue_generation()")
    op.drop_table("catalogue_generation")
