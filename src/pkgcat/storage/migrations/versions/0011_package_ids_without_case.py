"""package ids unique without regard to letter case

apt matches package names without regard to case (its cache hashes and
compares them case-insensitively), so ``COM.ALPHA.TWEAK`` and
``com.alpha.tweak`` are one package to a device: were they held by two
sources, an upgrade of one could install the other's file. The unique index
uq_packages_folded on (lower(package), case_twin) lets the database refuse a
second package row of the same id in any letter case, whatever races it
(SQLite and PostgreSQL both index the expression; ids are ASCII, so lower()
folds them the same way on both).

case_twin is 0 for every row but those that already differed only in case
from an older row (a smaller id) when this migration ran, from imports or
uploads of before: each of those gets its own id, so that the index can be
made without changing or deleting anything. ``pkgcat check package-ids`` lists
them for the operator to resolve.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # In place, on SQLite too: a batch rebuild of packages would drop the generation
    # triggers migration 0003 put on it.
    op.add_column(
        "packages", sa.Column("case_twin", sa.Integer(), server_default="0", nullable=False)
    )
    op.execute(
        "UPDATE packages SET case_twin = id WHERE id NOT IN "
        "(SELECT min(id) FROM packages GROUP BY lower(package))"
    )
    op.create_index(
        "uq_packages_folded", "packages", [sa.text("lower(package)"), "case_twin"], unique=True
    )


def downgrade() -> None:
    op.drop_index("uq_packages_folded", table_name="packages")
    op.execute("ALTER TABLE packages DROP COLUMN case_twin")
