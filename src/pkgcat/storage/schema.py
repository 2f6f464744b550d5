"""The relational schema as SQLAlchemy Core tables (portable: SQLite and PostgreSQL).

Times are unix seconds (UTC) in BIGINT columns, days are ``YYYY-MM-DD`` text,
amounts are canonical decimal text: all three compare and sort the same in
every database and need no driver-specific conversion on the request path.
Migrations under ``migrations/versions`` create and evolve these tables; the
tests check that the migrated database matches this module.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    text,
)

metadata = MetaData()

sources = Table(
    "sources",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("origin", String(200), nullable=False, server_default=""),
    Column("url", Text, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    # The repository's own name (Release Label or Origin), shown as source.name when set.
    Column("label", String(200), nullable=False, server_default=""),
)

packages = Table(
    "packages",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("package", String(255), nullable=False, unique=True),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False, index=True),
    Column("name", Text, nullable=False),
    Column("version", String(255), nullable=False),
    Column("architecture", String(64), nullable=False, server_default=""),
    Column("author", Text, nullable=False, server_default=""),
    Column("section", String(255), nullable=False, server_default=""),
    Column("description", Text, nullable=False, server_default=""),
    Column("long_description", Text, nullable=False, server_default=""),
    Column("pre_depends", Text, nullable=False, server_default=""),
    Column("depends", Text, nullable=False, server_default=""),
    Column("conflicts", Text, nullable=False, server_default=""),
    Column("replaces", Text, nullable=False, server_default=""),
    Column("size", BigInteger, nullable=False, server_default="0"),
    Column("md5sum", String(32), nullable=False, server_default=""),
    Column("sha256", String(64), nullable=False, server_default=""),
    Column("compatible", Text, nullable=False, server_default="[]"),
    Column("total_download", BigInteger, nullable=False, server_default="0"),
    Column("total_votes", BigInteger, nullable=False, server_default="0"),
    Column("total_value_votes", BigInteger, nullable=False, server_default="0"),
    Column("online", Boolean, nullable=False, server_default="1"),
    # NULL: no price from the operator yet (free, unless ``commercial``: then not known yet).
    Column("price", String(32), nullable=True),
    Column("currency", String(3), nullable=False, server_default="USD"),
    Column("icon", Text, nullable=False, server_default=""),
    Column("screenshots", Text, nullable=False, server_default="[]"),
    Column("url", Text, nullable=False, server_default=""),
    Column("released_at", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    # Tagged cydia::commercial by its repository: paid, whatever its price says.
    Column("commercial", Boolean, nullable=False, server_default="0"),
    # The package_records row this one was copied from by the last import (NULL: not imported).
    Column(
        "record_id",
        Integer,
        ForeignKey("package_records.id", name="fk_packages_record_id"),
        nullable=True,
    ),
    # 0, or the row's own id when its package differed only in letter case from an older
    # row's as migration 0011 ran: uq_packages_folded holds one row per id in any case.
    Column("case_twin", Integer, nullable=False, server_default="0"),
)

# apt reads package names without regard to case: one package row per id in any letter case.
Index("uq_packages_folded", func.lower(packages.c.package), packages.c.case_twin, unique=True)

package_records = Table(
    "package_records",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("package", String(255), nullable=False),
    Column("version", String(255), nullable=False),
    Column("architecture", String(64), nullable=False),
    Column("name", Text, nullable=False, server_default=""),
    Column("author", Text, nullable=False, server_default=""),
    Column("maintainer", Text, nullable=False, server_default=""),
    Column("section", String(255), nullable=False, server_default=""),
    Column("description", Text, nullable=False, server_default=""),
    Column("long_description", Text, nullable=False, server_default=""),
    Column("pre_depends", Text, nullable=False, server_default=""),
    Column("depends", Text, nullable=False, server_default=""),
    Column("conflicts", Text, nullable=False, server_default=""),
    Column("replaces", Text, nullable=False, server_default=""),
    # The four relation fields parsed: JSON object of field name to OR-groups of relations.
    Column("relations", Text, nullable=False, server_default="{}"),
    Column("size", BigInteger, nullable=False, server_default="0"),
    Column("md5sum", String(32), nullable=False, server_default=""),
    Column("sha256", String(64), nullable=False, server_default=""),
    Column("filename", Text, nullable=False, server_default=""),
    Column("tag", Text, nullable=False, server_default=""),
    Column("compatible", Text, nullable=False, server_default="[]"),
    Column("commercial", Boolean, nullable=False, server_default="0"),
    Column("icon", Text, nullable=False, server_default=""),
    Column("url", Text, nullable=False, server_default=""),
    Column("depiction", Text, nullable=False, server_default=""),
    Column("screenshots", Text, nullable=False, server_default="[]"),
    # blake2b of the stanza's bytes, keyed by the mapping context: equal means unchanged.
    Column("fingerprint", String(32), nullable=False),
    Column("first_seen", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    UniqueConstraint(
        "source_id", "package", "version", "architecture", name="uq_package_records_key"
    ),
)

applications = Table(
    "applications",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("shape", String(1), nullable=True),
    Column("timezone", String(64), nullable=True),
    Column("created_at", BigInteger, nullable=False),
    UniqueConstraint("source_id", "name", name="uq_applications_source_name"),
    CheckConstraint("shape IN ('A', 'B')", name="ck_applications_shape"),
)

secret_keys = Table(
    "secret_keys",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("application_id", Integer, ForeignKey("applications.id"), nullable=False, index=True),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("prefix", String(16), nullable=False, index=True),
    Column("created_at", BigInteger, nullable=False),
    Column("last_used_at", BigInteger, nullable=True),
    Column("revoked_at", BigInteger, nullable=True),
    # What the key may do, space-separated (migration 0007): every key reads; see domain.SCOPES.
    Column("scopes", Text, nullable=False, server_default=text("'read'")),
    # Its kind, secret or public (migration 0019): see domain.KeyKind and keys.py.
    Column("kind", String(8), nullable=False, server_default=text("'secret'")),
    # The one package (its identifier) a public key answers for; NULL: its whole source.
    Column("package", String(255), nullable=True),
)

purchases = Table(
    "purchases",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("package_id", Integer, ForeignKey("packages.id"), nullable=True),
    Column("allowed_for", String(16), nullable=False),
    Column("nickname", Text, nullable=False),
    Column("status", String(64), nullable=False),
    Column("total", String(32), nullable=False),
    Column("commission", String(32), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("purchased_at", BigInteger, nullable=False),
    Column("txn_id", String(128), nullable=False, unique=True),
    Column("profile_url", Text, nullable=False, server_default=""),
    Column("payment_platform", String(64), nullable=False),
    # The buyer's account id and device, when the operator's file gives them (migration 0005).
    Column("account", String(128), nullable=True),
    Column("udid", String(64), nullable=True),
    Column("device_model", String(64), nullable=True),
    # The payment platform's own fee on a store sale, as the platform reported it (migration
    # 0018); NULL: not reported (yet), or an imported purchase.
    Column("fee", String(32), nullable=True),
    # The price before a sale or discount, and the discount code applied (migration 0020);
    # NULL: none applied, or a purchase from before the shop.
    Column("list_price", String(32), nullable=True),
    Column("discount_code", String(40), nullable=True),
    CheckConstraint(
        "(allowed_for = 'package' AND package_id IS NOT NULL)"
        " OR (allowed_for = 'source' AND package_id IS NULL)",
        name="ck_purchases_scope",
    ),
)

# Newest first, the order the buyers operation reads: a page is an index range.
Index(
    "ix_purchases_package_order",
    purchases.c.package_id,
    purchases.c.purchased_at.desc(),
    purchases.c.txn_id,
)
Index(
    "ix_purchases_source_order",
    purchases.c.source_id,
    purchases.c.allowed_for,
    purchases.c.purchased_at.desc(),
    purchases.c.txn_id,
)
# The sales ledger: a source's purchases of both scopes, newest first.
Index(
    "ix_purchases_source_sales",
    purchases.c.source_id,
    purchases.c.purchased_at.desc(),
    purchases.c.txn_id,
)
# A purchase check by buyer: one buyer's purchases in a source are a short index range.
Index("ix_purchases_source_nickname", purchases.c.source_id, purchases.c.nickname)
Index("ix_purchases_source_account", purchases.c.source_id, purchases.c.account)

catalogue_generation = Table(
    "catalogue_generation",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("value", BigInteger, nullable=False),
    CheckConstraint("id = 1", name="ck_catalogue_generation_one_row"),
)
"""One number, incremented by triggers (migration 0003) on every change the request path reads."""

usage_days = Table(
    "usage_days",
    metadata,
    Column("application_id", Integer, ForeignKey("applications.id"), primary_key=True),
    Column("day", String(10), primary_key=True),
    Column("count", BigInteger, nullable=False),
)

usage_operations = Table(
    "usage_operations",
    metadata,
    Column("application_id", Integer, ForeignKey("applications.id"), primary_key=True),
    Column("day", String(10), primary_key=True),
    Column("operation", String(40), primary_key=True),
    Column("count", BigInteger, nullable=False),
)
"""usage_days split by operation: written in the same commit, so a day's counts sum to its total."""

buyer_devices = Table(
    "buyer_devices",
    metadata,
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("nickname", Text, nullable=False),
    Column("account", String(128), nullable=True),
    Column("udid", String(64), nullable=False),
    Column("device_model", String(64), nullable=True),
    # Its index (source_id, udid, ...) also serves the lookup of a device's buyers.
    UniqueConstraint("source_id", "udid", "nickname", name="uq_buyer_devices_key"),
)
"""The devices buyers registered in the operator's purchases (one buyer may have several)."""

package_whitelist = Table(
    "package_whitelist",
    metadata,
    Column("package_id", Integer, ForeignKey("packages.id"), primary_key=True),
    Column("udid", String(64), primary_key=True),
    Column("description", Text, nullable=False, server_default=""),
    Column("added_at", BigInteger, nullable=False),
)
"""The devices a seller allows one package whatever they bought (migration 0019): the primary
key serves both a licence's lookup and the list's pages; changes move the generation."""

api_secrets = Table(
    "api_secrets",
    metadata,
    Column("name", Text, primary_key=True),
    Column("value", Text, nullable=False),
)
"""Per-database secrets made by migration 0005 (``cursor_key``): every worker and host agrees."""

deb_files = Table(
    "deb_files",
    metadata,
    Column("sha256", String(64), primary_key=True),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False, index=True),
    Column("package", String(255), nullable=False),
    Column("version", String(255), nullable=False),
    Column("architecture", String(64), nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("md5sum", String(32), nullable=False),
    Column("sha1", String(40), nullable=False),
    Column("sha512", String(128), nullable=False),
    # The control paragraph of the file, as the Packages index shows it (before Filename...).
    Column("control", Text, nullable=False),
    Column("stored_at", BigInteger, nullable=False),
    UniqueConstraint("package", "version", "architecture", name="uq_deb_files_key"),
)
"""The .deb files held in the blob store, by SHA-256 (migration 0006); changes move the generation."""

featured_banners = Table(
    "featured_banners",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("package", String(255), nullable=False),
    Column("image_url", Text, nullable=False),
    Column("title", String(200), nullable=False),
    Column("position", Integer, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    UniqueConstraint("source_id", "package", name="uq_featured_banners_package"),
)
"""The banners of sileo-featured.json, per source (migration 0012); changes move the generation."""

repository_keys = Table(
    "repository_keys",
    metadata,
    Column("fingerprint", String(64), primary_key=True),
    Column("public_key", Text, nullable=False),
    # The secret key, sealed with PKGCAT_REPOSITORY_PASSPHRASE (OpenPGP password encryption).
    Column("sealed_key", Text, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("retired_at", BigInteger, nullable=True),
)
"""The keys that sign the served repository: every key not retired signs (migration 0006)."""

download_grants = Table(
    "download_grants",
    metadata,
    Column("grant_id", String(32), primary_key=True),
    Column("expires_at", BigInteger, nullable=False, index=True),
)
"""Signed download URLs already claimed: each is honoured for one client, on every worker
and host. Beside each grant's row, rows keyed by MACs of it: the client that claimed it and,
once its file went out whole, that it is done (:mod:`pkgcat.repository.grants`)."""

_SEQ = BigInteger().with_variant(Integer(), "sqlite")  # SQLite numbers only INTEGER keys itself

webhook_events = Table(
    "webhook_events",
    metadata,
    Column("seq", _SEQ, primary_key=True, autoincrement=True),
    Column("event_id", String(40), nullable=False),
    Column("type", String(40), nullable=False),
    # No foreign key: the outbox is a log; a source's events go with it when it is cascaded.
    Column("source_id", Integer, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    # The event's facts as JSON; each endpoint's body is rendered from them in its shape.
    Column("data", Text, nullable=False),
    UniqueConstraint("event_id", name="uq_webhook_events_event_id"),
)
"""The outbox (migration 0009): events written in the transaction of the change they tell of."""
Index("ix_webhook_events_source_seq", webhook_events.c.source_id, webhook_events.c.seq)

webhook_endpoints = Table(
    "webhook_endpoints",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("endpoint_id", String(40), nullable=False),
    Column("application_id", Integer, ForeignKey("applications.id"), nullable=False, index=True),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False, index=True),
    Column("url", Text, nullable=False),
    # JSON list of the event types it wants.
    Column("events", Text, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("disabled_reason", Text, nullable=True),
    # The signing secret, sealed with PKGCAT_WEBHOOK_PASSPHRASE; never in plain text.
    Column("sealed_secret", Text, nullable=False),
    Column("sealed_previous", Text, nullable=True),
    Column("previous_until", BigInteger, nullable=True),
    # The seq of the last event handled (delivered, or not wanted).
    Column("position", BigInteger, nullable=False),
    Column("next_attempt_ms", BigInteger, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("failing_since", BigInteger, nullable=True),
    Column("lease_owner", String(40), nullable=True),
    Column("lease_until_ms", BigInteger, nullable=True),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    UniqueConstraint("endpoint_id", name="uq_webhook_endpoints_endpoint_id"),
)
"""Each application's webhook receivers and their delivery state (migration 0009)."""

webhook_attempts = Table(
    "webhook_attempts",
    metadata,
    Column("id", _SEQ, primary_key=True, autoincrement=True),
    Column("endpoint_id", Integer, ForeignKey("webhook_endpoints.id"), nullable=False),
    Column("event_id", String(40), nullable=False),
    Column("attempted_at", BigInteger, nullable=False),
    Column("ok", Boolean, nullable=False),
    Column("status", Integer, nullable=True),
    Column("duration_ms", Integer, nullable=False),
    # The first bytes of the answer, or the reason no answer came.
    Column("response", Text, nullable=False),
)
"""Every delivery attempt, for the delivery log (migration 0009)."""
Index("ix_webhook_attempts_endpoint", webhook_attempts.c.endpoint_id, webhook_attempts.c.id)

webhook_deliverers = Table(
    "webhook_deliverers",
    metadata,
    # The id its leases carry in webhook_endpoints.lease_owner.
    Column("owner", String(40), primary_key=True),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("senders", Integer, nullable=False),
    Column("started_at", BigInteger, nullable=False),
    # The database's clock, in milliseconds: its last heartbeat plus its lease.
    Column("alive_until_ms", BigInteger, nullable=False),
)
"""The running deliverers, alive while their heartbeats come (migration 0015)."""

buyers = Table(
    "buyers",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("email", String(254), nullable=False, unique=True),
    Column("created_at", BigInteger, nullable=False),
)
"""The store's buyer accounts, one per email address, lower-case (migration 0010)."""

buyer_codes = Table(
    "buyer_codes",
    metadata,
    Column("email", String(254), primary_key=True),
    Column("code_hash", String(64), nullable=False),
    Column("expires_at", BigInteger, nullable=False),
)
"""The live one-time sign-in code of an address, by its SHA-256; deleted when used."""

buyer_tokens = Table(
    "buyer_tokens",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("secret_hash", String(64), nullable=False),
    Column("buyer_id", Integer, ForeignKey("buyers.id"), nullable=False, index=True),
    Column("udid", String(64), nullable=False),
    Column("model", String(64), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("revoked_at", BigInteger, nullable=True),
)
"""A device's sign-in: the hashes of its token and payment secret, never the values."""

store_payments = Table(
    "store_payments",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("buyer_id", Integer, ForeignKey("buyers.id"), nullable=False, index=True),
    Column("udid", String(64), nullable=False),
    Column("model", String(64), nullable=False),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("package_id", Integer, ForeignKey("packages.id"), nullable=True),
    Column("amount", String(32), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("platform", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("completed_at", BigInteger, nullable=True),
    # The price before a sale or discount, and the discount whose use it claimed (0020).
    Column("list_price", String(32), nullable=True),
    Column("discount_id", String(40), nullable=True),
)
"""Each payment the store started; a completed one wrote its purchases row in the same transaction."""

store_events = Table(
    "store_events",
    metadata,
    Column("event_id", String(255), primary_key=True),
    Column("applied_at", BigInteger, nullable=False),
)
"""Payment platform events applied, recorded in the transaction that applied each (once)."""

idempotency_records = Table(
    "idempotency_records",
    metadata,
    Column(
        "application_id",
        Integer,
        ForeignKey("applications.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("idempotency_key", String(255), primary_key=True),
    Column("operation", String(64), nullable=False),
    # The SHA-256 of what was sent: the same key with other bytes is refused.
    Column("request_sha256", String(64), nullable=False),
    Column("status", Integer, nullable=False),
    Column("body", LargeBinary, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False, index=True),
)
"""The answer of each write sent with an ``Idempotency-Key``, until it expires (migration 0007)."""

download_days = Table(
    "download_days",
    metadata,
    Column("package", String(255), primary_key=True),
    Column("day", String(10), primary_key=True),
    Column("count", BigInteger, nullable=False),
)
"""Whole .deb files served, per package identifier and UTC day (migration 0008)."""

download_totals = Table(
    "download_totals",
    metadata,
    Column("package", String(255), primary_key=True),
    Column("count", BigInteger, nullable=False),
)
"""Each package's sum of ``download_days``, kept in the same commit: details reads one row."""

# Money (migration 0018): amounts in the currency's minor units (cents; yen; fils), as integers.

source_money = Table(
    "source_money",
    metadata,
    Column("source_id", Integer, ForeignKey("sources.id"), primary_key=True),
    # The source's commission in percent, as decimal text; NULL: the deployment's.
    Column("commission_percent", String(16), nullable=True),
    # The seller's connected account on the payout platform (Stripe Connect: acct_...).
    Column("account_id", String(255), nullable=True),
    Column("account_test", Boolean, nullable=False, server_default="0"),
    Column("payouts_enabled", Boolean, nullable=False, server_default="0"),
    Column("details_submitted", Boolean, nullable=False, server_default="0"),
    Column("disabled_reason", Text, nullable=True),
    Column("updated_at", BigInteger, nullable=False),
)
"""What a source's money is subject to: its commission, and the account it is paid out to."""
Index("ix_source_money_account", source_money.c.account_id)

payout_thresholds = Table(
    "payout_thresholds",
    metadata,
    Column("source_id", Integer, ForeignKey("sources.id"), primary_key=True),
    Column("currency", String(3), primary_key=True),
    Column("amount", BigInteger, nullable=False),
)
"""A source's own least payout in a currency, above the deployment's minimum."""

LEDGER_KINDS = (
    "sale", "fee", "release", "refund", "chargeback", "payout", "payout_failed", "adjustment",
)  # fmt: skip

ledger_entries = Table(
    "ledger_entries",
    metadata,
    Column("seq", _SEQ, primary_key=True, autoincrement=True),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("currency", String(3), nullable=False),
    # No money behind it (the store's test mode): never paid out through a live platform.
    Column("test", Boolean, nullable=False),
    Column("kind", String(16), nullable=False),
    # What the entry is about, unique per kind: a sale's txn_id, a refund's or payout's id.
    Column("reference", String(128), nullable=False),
    # What it adds to the pending and to the available balance (negative: takes away).
    Column("pending", BigInteger, nullable=False),
    Column("available", BigInteger, nullable=False),
    Column("txn_id", String(128), nullable=True),
    Column("payout_id", String(40), nullable=True),
    Column("reason", Text, nullable=True),
    Column("created_at", BigInteger, nullable=False),
    UniqueConstraint("kind", "reference", name="uq_ledger_entries_kind_reference"),
    CheckConstraint(
        "kind IN (" + ", ".join(f"'{kind}'" for kind in LEDGER_KINDS) + ")",
        name="ck_ledger_entries_kind",
    ),
)
"""The sellers' ledger: append-only, one row per movement; every balance is its sum."""
Index(
    "ix_ledger_entries_balance",
    ledger_entries.c.source_id,
    ledger_entries.c.currency,
    ledger_entries.c.test,
)
Index("ix_ledger_entries_txn", ledger_entries.c.txn_id)

ledger_holds = Table(
    "ledger_holds",
    metadata,
    Column("txn_id", String(128), primary_key=True),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("test", Boolean, nullable=False),
    Column("release_at", BigInteger, nullable=False, index=True),
    # The platform has not told its fee yet: not released until it has.
    Column("fee_pending", Boolean, nullable=False, server_default="0"),
)
"""The store sales still pending: deleted by their release, in the release's transaction."""

payouts = Table(
    "payouts",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("test", Boolean, nullable=False),
    # The payout date it belongs to (YYYY-MM-DD): one payout per source, currency and date.
    Column("period", String(10), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),
    Column("account_id", String(255), nullable=False),
    Column("transfer_id", String(255), nullable=True),
    Column("platform_payout_id", String(255), nullable=True),
    Column("reversal_id", String(255), nullable=True),
    Column("failure_code", String(64), nullable=True),
    Column("failure_message", Text, nullable=True),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("lease_owner", String(40), nullable=True),
    Column("lease_until", BigInteger, nullable=True),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("settled_at", BigInteger, nullable=True),
    UniqueConstraint("source_id", "currency", "test", "period", name="uq_payouts_period"),
    CheckConstraint(
        "status IN ('pending', 'in_transit', 'paid', 'failed')", name="ck_payouts_status"
    ),
)
"""Each payout: made once per source, currency and payout date, sent by the host that claims it."""
Index("ix_payouts_source_order", payouts.c.source_id, payouts.c.created_at.desc(), payouts.c.id)
Index("ix_payouts_status", payouts.c.status)

payout_items = Table(
    "payout_items",
    metadata,
    Column("entry_seq", _SEQ, ForeignKey("ledger_entries.seq"), primary_key=True),
    Column("payout_id", String(40), ForeignKey("payouts.id"), nullable=False, index=True),
)
"""The ledger entries each payout paid: an entry is paid by one payout at most (its key)."""

store_refunds = Table(
    "store_refunds",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("txn_id", String(128), nullable=False, index=True),
    Column("amount", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    # seller: asked through the service; platform: told by the platform (its dashboard).
    Column("origin", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("request_key", String(255), nullable=True),
    Column("platform_refund_id", String(255), nullable=True, unique=True),
    Column("failure", Text, nullable=True),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    UniqueConstraint("source_id", "request_key", name="uq_store_refunds_request"),
    CheckConstraint("status IN ('pending', 'succeeded', 'failed')", name="ck_store_refunds_status"),
)
"""Each refund of a store sale, pending while the platform is asked (counted as refunded)."""

count_batches = Table(
    "count_batches",
    metadata,
    # A random number each server worker draws for itself, and its batches' numbers in order.
    Column("worker", BigInteger, primary_key=True),
    Column("batch", BigInteger, primary_key=True),
    # True: written by the batch's own commit (it landed); false: settled as never landing.
    Column("landed", Boolean, nullable=False),
    Column("at", BigInteger, nullable=False),
)
"""Batches of counts on PostgreSQL whose fate a worker may still ask (migration 0014)."""

# The sellers' shop (migration 0020): pages, versions, sales, gifts, discounts, history.

package_pages = Table(
    "package_pages",
    metadata,
    Column("package_id", Integer, ForeignKey("packages.id"), primary_key=True),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    # NULL: not set by the seller; the .deb's value stands.
    Column("name", Text, nullable=True),
    Column("description", Text, nullable=True),
    Column("long_description", Text, nullable=True),
    Column("section", String(255), nullable=True),
    Column("compatible", Text, nullable=True),
    Column("min_ios", String(16), nullable=True),
    Column("max_ios", String(16), nullable=True),
    Column("support_url", Text, nullable=True),
    Column("source_url", Text, nullable=True),
    # Uploaded images, by their blob name (``DIGEST.png``); screenshots as a JSON list.
    Column("icon", String(80), nullable=True),
    Column("header", String(80), nullable=True),
    Column("screenshots", Text, nullable=True),
    # The version served now when the seller rolled back (NULL: the newest not withdrawn).
    Column("served_version", String(255), nullable=True),
    Column("updated_at", BigInteger, nullable=False),
)
"""What a seller set of a package's page, over what its .deb says."""

package_versions = Table(
    "package_versions",
    metadata,
    Column("package_id", Integer, ForeignKey("packages.id"), primary_key=True),
    Column("version", String(255), primary_key=True),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("changelog", Text, nullable=False, server_default=""),
    Column("withdrawn_at", BigInteger, nullable=True),
    Column("updated_at", BigInteger, nullable=False),
)
"""A version's changelog, and whether it is withdrawn (a version with neither has no row)."""

package_sales = Table(
    "package_sales",
    metadata,
    Column("package_id", Integer, ForeignKey("packages.id"), primary_key=True),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("price", String(32), nullable=False),
    Column("starts_at", BigInteger, nullable=False),
    Column("ends_at", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    CheckConstraint("starts_at < ends_at", name="ck_package_sales_window"),
)
"""A package's sale price for a window of time (one per package)."""

package_history = Table(
    "package_history",
    metadata,
    Column("id", _SEQ, primary_key=True, autoincrement=True),
    Column("package_id", Integer, ForeignKey("packages.id"), nullable=False),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("at", BigInteger, nullable=False),
    # Who: ``seller:APPLICATION`` (a key's application) or ``operator:COMMAND``.
    Column("actor", String(200), nullable=False),
    Column("change", String(40), nullable=False),
    # What was set, as JSON (each field's new value; for a page, the old one too).
    Column("facts", Text, nullable=False),
)
"""Every change of a package's shop, in order: who set what, when."""
Index("ix_package_history_package", package_history.c.package_id, package_history.c.id)

gift_codes = Table(
    "gift_codes",
    metadata,
    Column("id", String(40), primary_key=True),
    # The code's SHA-256; the code itself is shown once, to the seller (or mailed).
    Column("code_hash", String(64), nullable=False),
    Column("hint", String(8), nullable=False),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("package_id", Integer, ForeignKey("packages.id"), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("created_by", String(200), nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("recipient", String(254), nullable=True),
    Column("redeemed_at", BigInteger, nullable=True),
    Column("buyer_id", Integer, ForeignKey("buyers.id"), nullable=True),
    Column("txn_id", String(128), nullable=True),
    UniqueConstraint("code_hash", name="uq_gift_codes_code_hash"),
)
"""Single-use gift codes; redeeming one writes a purchase (payment_platform ``gift``)."""
Index("ix_gift_codes_package", gift_codes.c.package_id, gift_codes.c.created_at)

discount_codes = Table(
    "discount_codes",
    metadata,
    Column("id", String(40), primary_key=True),
    # Upper case, unique in the store: a buyer types it without naming the seller.
    Column("code", String(40), nullable=False),
    Column("source_id", Integer, ForeignKey("sources.id"), nullable=False),
    Column("package_id", Integer, ForeignKey("packages.id"), nullable=False),
    Column("kind", String(8), nullable=False),
    # A percentage (``20``), or an amount in the package's currency (``0.50``).
    Column("value", String(32), nullable=False),
    Column("max_uses", Integer, nullable=False),
    Column("uses", Integer, nullable=False, server_default="0"),
    Column("ends_at", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("created_by", String(200), nullable=False),
    Column("ended_at", BigInteger, nullable=True),
    UniqueConstraint("code", name="uq_discount_codes_code"),
    CheckConstraint("uses >= 0 AND uses <= max_uses", name="ck_discount_codes_uses"),
    CheckConstraint("kind IN ('percent', 'amount')", name="ck_discount_codes_kind"),
)
"""Discount codes off a package's price: each use claimed by one payment, within the limit."""
Index("ix_discount_codes_package", discount_codes.c.package_id)

buyer_discounts = Table(
    "buyer_discounts",
    metadata,
    Column("buyer_id", Integer, ForeignKey("buyers.id"), primary_key=True),
    Column("discount_id", String(40), ForeignKey("discount_codes.id"), primary_key=True),
    Column("entered_at", BigInteger, nullable=False),
)
"""The discount codes a buyer entered on the sign-in page, for their next purchase."""

index_publisher = Table(
    "index_publisher",
    metadata,
    Column("id", Integer, primary_key=True),
    # The worker that builds and publishes the indexes while its lease runs.
    Column("owner", String(40), nullable=False),
    # The database's clock, in milliseconds: its last renewal plus the lease.
    Column("until_ms", BigInteger, nullable=False),
    CheckConstraint("id = 1", name="ck_index_publisher_one_row"),
)
"""The lease of the one worker, among all hosts, that publishes the indexes (migration 0021)."""

index_publications = Table(
    "index_publications",
    metadata,
    # Numbered in order of publication: a worker serves the highest it knows.
    Column("number", BigInteger, primary_key=True, autoincrement=False),
    Column("generation", BigInteger, nullable=False),
    # The Valid-Until period it was signed for (0: none).
    Column("period", BigInteger, nullable=False),
    # What else the indexes are made from (the repository's settings), as a digest.
    Column("made_from", String(64), nullable=False),
    Column("made_ms", BigInteger, nullable=False),
    # The signed files whole and the Packages files by SHA-256 (zlib'd JSON).
    Column("files", LargeBinary, nullable=False),
)
"""The published index sets (migration 0021): every worker of every host serves these."""

index_blobs = Table(
    "index_blobs",
    metadata,
    # A by-hash name: ``SHA256/<hex>``, ``MD5Sum/<hex>``...
    Column("digest", String(140), primary_key=True),
    # The blob in the blob store holding the file.
    Column("sha256", String(64), nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("media_type", String(60), nullable=False),
    # When a publication last named it (the database's clock, in milliseconds).
    Column("named_ms", BigInteger, nullable=False),
)
"""Every by-hash index file published lately, in the blob store (migration 0021)."""
Index("ix_index_blobs_named", index_blobs.c.named_ms)
