"""licences: public keys, keys for one package, and each package's whitelist

secret_keys gains ``kind`` (``secret``, which every existing key stays, or ``public``: a key
that may only check a device's licence, made to sit inside a tweak) and ``package``: the
identifier of the one package a public key answers for (a DRM API's package token), or NULL
for its whole source. Both are plain ADD COLUMNs: a batch copy of the table on SQLite would
drop the triggers that move the catalogue generation when a key changes (0003). A key's
kind and package are set when it is made and never change, as its scopes.

package_whitelist holds the devices (UDIDs, with a description) a seller allows one
package whatever they bought, as YouRepo's whitelist does; its primary key (package_id,
udid) serves both the licence check's lookup and the list's pages in udid order. Changes
move the catalogue generation (statement triggers on PostgreSQL, row triggers on SQLite,
as 0012's), since rendered check answers are kept for a generation.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | None = None
depends_on: str | None = None

BUMP = "UPDATE catalogue_generation SET value = value + 1 WHERE id = 1"
EVENTS = ("INSERT", "UPDATE", "DELETE")


def _trigger_name(event: str) -> str:
    """Named as migrations 0003 and 0012 name theirs."""
    return f"trg_package_whitelist_{event.lower()}_generation"


def upgrade() -> None:
    op.add_column(
        "secret_keys",
        sa.Column("kind", sa.String(length=8), nullable=False, server_default=sa.text("'secret'")),
    )
    op.add_column("secret_keys", sa.Column("package", sa.String(length=255), nullable=True))
    op.create_table(
        "package_whitelist",
        sa.Column("package_id", sa.Integer(), nullable=False),
        sa.Column("udid", sa.String(length=64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False, server_default=""),
        sa.Column("added_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["package_id"], ["packages.id"]),
        sa.PrimaryKeyConstraint("package_id", "udid"),
    )
    dialect = op.get_bind().dialect.name
    for event in EVENTS:
        name = _trigger_name(event)
        if dialect == "postgresql":
            op.execute(
                f"CREATE TRIGGER {name} AFTER {event} ON package_whitelist "
                "FOR EACH STATEMENT EXECUTE FUNCTION bump_catalogue_generation()"
            )
        else:
            op.execute(f"CREATE TRIGGER {name} AFTER {event} ON package_whitelist BEGIN {BUMP}; END")


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for event in EVENTS:
        suffix = " ON package_whitelist" if dialect == "postgresql" else ""
        op.execute(f"DROP TRIGGER {_trigger_name(event)}{suffix}")
    op.drop_table("package_whitelist")
    # In place (SQLite 3.35 and later, PostgreSQL), keeping 0003's triggers on the table.
    op.execute("ALTER TABLE secret_keys DROP COLUMN package")
    op.execute("ALTER TABLE secret_keys DROP COLUMN kind")
