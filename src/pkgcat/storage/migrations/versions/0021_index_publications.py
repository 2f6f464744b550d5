"""index publications: one worker of all hosts publishes the indexes, every worker serves them

index_publisher holds the lease (owner, until when in the database's clock) of the one worker
that builds the index set and publishes it. index_publications holds the published sets,
numbered in order: the signed files (Release, InRelease, Release.gpg of each repository)
whole, the Packages files by SHA-256 (their bytes are in the blob store). index_blobs names
every by-hash file published lately and the blob that holds it, so that every worker of
every host serves what any signed Release it may have handed out names.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "index_publisher",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(length=40), nullable=False),
        sa.Column("until_ms", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("id = 1", name="ck_index_publisher_one_row"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "index_publications",
        sa.Column("number", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.Column("period", sa.BigInteger(), nullable=False),
        sa.Column("made_from", sa.String(length=64), nullable=False),
        sa.Column("made_ms", sa.BigInteger(), nullable=False),
        sa.Column("files", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("number"),
    )
    op.create_table(
        "index_blobs",
        sa.Column("digest", sa.String(length=140), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("media_type", sa.String(length=60), nullable=False),
        sa.Column("named_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("digest"),
    )
    op.create_index("ix_index_blobs_named", "index_blobs", ["named_ms"])


def downgrade() -> None:
    op.drop_index("ix_index_blobs_named", table_name="index_blobs")
    op.drop_table("index_blobs")
    op.drop_table("index_publications")
    op.drop_table("index_publisher")
