"""the sellers' shop: package pages, versions, sales, gifts, discount codes and their history

package_pages holds what a seller set of a package's page, over what its .deb says (NULL: the
.deb's value stands): name, short and long description, section, compatible labels, the
minimum and maximum iOS version, support and source links, the uploaded icon, header and
screenshots (blob digests), and the version served now when the seller rolled back.
package_versions holds each version's changelog and whether it is withdrawn. package_sales
holds a package's sale price and its window. package_history is the log of every change
(who set what, when). gift_codes are single-use codes for a package (stored hashed);
discount_codes are codes off a package's price with a use limit (``uses <= max_uses`` held
by a CHECK as well as by the claiming UPDATE); buyer_discounts the codes a buyer entered,
applied to their next purchase of the package. A purchase records its list price and the
discount code applied; a store payment carries them until it completes.

Every change of the shop also updates its package's row, whose triggers move the catalogue
generation: the indexes and depictions follow.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | None = None
depends_on: str | None = None

_SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "package_pages",
        sa.Column("package_id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("long_description", sa.Text(), nullable=True),
        sa.Column("section", sa.String(length=255), nullable=True),
        sa.Column("compatible", sa.Text(), nullable=True),
        sa.Column("min_ios", sa.String(length=16), nullable=True),
        sa.Column("max_ios", sa.String(length=16), nullable=True),
        sa.Column("support_url", sa.Text(), nullable=True),
        sa.Column("source_url", sa.Text(), nullable=True),
        sa.Column("icon", sa.String(length=80), nullable=True),
        sa.Column("header", sa.String(length=80), nullable=True),
        sa.Column("screenshots", sa.Text(), nullable=True),
        sa.Column("served_version", sa.String(length=255), nullable=True),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["package_id"], ["packages.id"]),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.PrimaryKeyConstraint("package_id"),
    )
    op.create_table(
        "package_versions",
        sa.Column("package_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(length=255), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("changelog", sa.Text(), server_default="", nullable=False),
        sa.Column("withdrawn_at", sa.BigInteger(), nullable=True),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["package_id"], ["packages.id"]),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.PrimaryKeyConstraint("package_id", "version"),
    )
    op.create_table(
        "package_sales",
        sa.Column("package_id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("price", sa.String(length=32), nullable=False),
        sa.Column("starts_at", sa.BigInteger(), nullable=False),
        sa.Column("ends_at", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["package_id"], ["packages.id"]),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.PrimaryKeyConstraint("package_id"),
        sa.CheckConstraint("starts_at < ends_at", name="ck_package_sales_window"),
    )
    op.create_table(
        "package_history",
        sa.Column("id", _SEQ, autoincrement=True, nullable=False),
        sa.Column("package_id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("change", sa.String(length=40), nullable=False),
        sa.Column("facts", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["package_id"], ["packages.id"]),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_package_history_package", "package_history", ["package_id", "id"])
    op.create_table(
        "gift_codes",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("hint", sa.String(length=8), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("package_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("recipient", sa.String(length=254), nullable=True),
        sa.Column("redeemed_at", sa.BigInteger(), nullable=True),
        sa.Column("buyer_id", sa.Integer(), nullable=True),
        sa.Column("txn_id", sa.String(length=128), nullable=True),
        sa.ForeignKeyConstraint(["package_id"], ["packages.id"]),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.ForeignKeyConstraint(["buyer_id"], ["buyers.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("code_hash", name="uq_gift_codes_code_hash"),
    )
    op.create_index("ix_gift_codes_package", "gift_codes", ["package_id", "created_at"])
    op.create_table(
        "discount_codes",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("code", sa.String(length=40), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("package_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("value", sa.String(length=32), nullable=False),
        sa.Column("max_uses", sa.Integer(), nullable=False),
        sa.Column("uses", sa.Integer(), server_default="0", nullable=False),
        sa.Column("ends_at", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("ended_at", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["package_id"], ["packages.id"]),
        sa.ForeignKeyConstraint(["source_id"], ["sources.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("code", name="uq_discount_codes_code"),
        sa.CheckConstraint("uses >= 0 AND uses <= max_uses", name="ck_discount_codes_uses"),
        sa.CheckConstraint("kind IN ('percent', 'amount')", name="ck_discount_codes_kind"),
    )
    op.create_index("ix_discount_codes_package", "discount_codes", ["package_id"])
    op.create_table(
        "buyer_discounts",
        sa.Column("buyer_id", sa.Integer(), nullable=False),
        sa.Column("discount_id", sa.String(length=40), nullable=False),
        sa.Column("entered_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["buyer_id"], ["buyers.id"]),
        sa.ForeignKeyConstraint(["discount_id"], ["discount_codes.id"]),
        sa.PrimaryKeyConstraint("buyer_id", "discount_id"),
    )
    # ALTER TABLE ADD COLUMN on both databases: purchases keeps its triggers (0003).
    op.add_column("purchases", sa.Column("list_price", sa.String(length=32), nullable=True))
    op.add_column("purchases", sa.Column("discount_code", sa.String(length=40), nullable=True))
    op.add_column("store_payments", sa.Column("list_price", sa.String(length=32), nullable=True))
    op.add_column("store_payments", sa.Column("discount_id", sa.String(length=40), nullable=True))


def downgrade() -> None:
    op.drop_column("store_payments", "discount_id")
    op.drop_column("store_payments", "list_price")
    op.drop_column("purchases", "discount_code")
    op.drop_column("purchases", "list_price")
    op.drop_table("buyer_discounts")
    op.drop_index("ix_discount_codes_package", table_name="discount_codes")
    op.drop_table("discount_codes")
    op.drop_index("ix_gift_codes_package", table_name="gift_codes")
    op.drop_table("gift_codes")
    op.drop_index("ix_package_history_package", table_name="package_history")
    op.drop_table("package_history")
    op.drop_table("package_sales")
    op.drop_table("package_versions")
    op.drop_table("package_pages")
