"""featured banners: what sileo-featured.json shows atop a repository

One row per banner: the source whose repository shows it (the whole catalogue's shows every
source's), the package it opens, its image (an https address) and title, and its place in
the row. Changes move the catalogue generation, as deb_files' do, so every worker rebuilds
its indexes with them.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | None = None
depends_on: str | None = None

BUMP = "UPDATE catalogue_generation SET value = value + 1 WHERE id = 1"
EVENTS = ("INSERT", "UPDATE", "DELETE")


def _trigger_name(event: str) -> str:
    """Named as migrations 0003 and 0006 name theirs."""
    return f"trg_featured_banners_{event.lower()}_generation"


def upgrade() -> None:
    op.create_table(
        "featured_banners",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("package", sa.String(length=255), nullable=False),
        sa.Column("image_url", sa.Text(), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("source_id", "package", name="uq_featured_banners_package"),
    )
    dialect = op.get_bind().dialect.name
    for event in EVENTS:
        name = _trigger_name(event)
        if dialect == "postgresql":
            op.execute(
                f"CREATE TRIGGER {name} AFTER {event} ON featured_banners "
                "FOR EACH STATEMENT EXECUTE FUNCTION bump_catalogue_generation()"
            )
        else:
            op.execute(f"CREATE TRIGGER {name} AFTER {event} ON featured_banners BEGIN {BUMP}; END")


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for event in EVENTS:
        suffix = " ON featured_banners" if dialect == "postgresql" else ""
        op.execute(f"DROP TRIGGER {_trigger_name(event)}{suffix}")
    op.drop_table("featured_banners")
