"""the served repository: stored .deb files, its signing keys, spent download grants

deb_files lists the .deb files held in the blob store (content-addressed by
SHA-256): one row per file, with the package, version and architecture its
control file names (one file per such triple, so the same version cannot be
published twice with different bytes), its size and digests, and its control
paragraph as the Packages index shows it. A change there moves the catalogue
generation, like a change to packages, so every worker rebuilds its indexes.

repository_keys holds the OpenPGP keys that sign the indexes: the public
certificate, and the secret key sealed (OpenPGP password encryption) with the
operator's passphrase, never in plain text. Every key not retired signs, so a
rotation signs with the old and the new key until the old one is retired. Its
changes move the generation too: the next indexes carry the new signatures.

download_grants records each signed download URL once it has been used (its
random id and expiry), so a URL is honoured once across every worker and host.
It does not move the generation.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None

BUMP = "UPDATE catalogue_generation SET value = value + 1 WHERE id = 1"
WATCHED = ("deb_files", "repository_keys")
EVENTS = ("INSERT", "UPDATE", "DELETE")


def _trigger_name(table: str, event: str) -> str:
    """Named as migration 0003 names its triggers."""
    return f"trg_{table}_{event.lower()}_generation"


def upgrade() -> None:
    op.create_table(
        "deb_files",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("package", sa.String(length=255), nullable=False),
        sa.Column("version", sa.String(length=255), nullable=False),
        sa.Column("architecture", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("md5sum", sa.String(length=32), nullable=False),
        sa.Column("sha1", sa.String(length=40), nullable=False),
        sa.Column("sha512", sa.String(length=128), nullable=False),
        sa.Column("control", sa.Text(), nullable=False),
        sa.Column("stored_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.PrimaryKeyConstraint("sha256"),
        sa.UniqueConstraint("package", "version", "architecture", name="uq_deb_files_key"),
    )
    op.create_index("ix_deb_files_source_id", "deb_files", ["source_id"])
    op.create_table(
        "repository_keys",
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("public_key", sa.Text(), nullable=False),
        sa.Column("sealed_key", sa.Text(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("retired_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("fingerprint"),
    )
    op.create_table(
        "download_grants",
        sa.Column("grant_id", sa.String(length=32), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("grant_id"),
    )
    op.create_index("ix_download_grants_expires_at", "download_grants", ["expires_at"])
    dialect = op.get_bind().dialect.name
    for table in WATCHED:
        for event in EVENTS:
            name = _trigger_name(table, event)
            if dialect == "postgresql":
                op.execute(
                    f"CREATE TRIGGER {name} AFTER {event} ON {table} "
                    "FOR EACH STATEMENT EXECUTE FUNCTION bump_catalogue_generation()"
                )
            else:
                op.execute(f"CREATE TRIGGER {name} AFTER {event} ON {table} BEGIN {BUMP}; END")


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for table in WATCHED:
        for event in EVENTS:
            suffix = f" ON {table}" if dialect == "postgresql" else ""
            op.execute(f"DROP TRIGGER {_trigger_name(table, event)}{suffix}")
    op.drop_index("ix_download_grants_expires_at", table_name="download_grants")
    op.drop_table("download_grants")
    op.drop_table("repository_keys")
    op.drop_index("ix_deb_files_source_id", table_name="deb_files")
    op.drop_table("deb_files")
