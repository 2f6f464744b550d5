"""Settings, read from ``PKGCAT_*`` environment variables.

Nothing here is built at import time: the caller (the CLI, a test, a server
worker) builds a :class:`Settings` and hands it to :func:`pkgcat.app.create_app`.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import re
from decimal import Decimal
from typing import Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from limits import parse
from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from pkgcat.domain import Shape

DEFAULT_DATABASE_URL = "sqlite:///./pkgcat.db"
_REDIS_SCHEMES = {"redis", "rediss", "unix"}
"""The addresses redis-py's ``from_url`` reads."""
_LIMIT_STORAGES = {"memory", *_REDIS_SCHEMES}
_BACKEND_MODULES: dict[str, tuple[str, ...]] = {"sqlite": (), "postgresql": ("asyncpg", "psycopg")}
"""The backends pkgcat runs on, and the drivers each needs beyond the server's own."""
KIB = 1024
MIB = 1024 * KIB
DEFAULT_CACHE_MAX_BYTES = 128 * MIB
DEFAULT_FETCH_TIMEOUT = 30
DEFAULT_FETCH_DEADLINE = 600
DEFAULT_FETCH_MAX_BYTES = 256 * MIB
DEFAULT_INDEX_MAX_BYTES = 256 * MIB
DEFAULT_STANZA_MAX_BYTES = 256 * KIB
DEFAULT_STANZA_MAX_FIELDS = 100
DEFAULT_DEPICTION_MAX_BYTES = 1 * MIB
DEFAULT_DEPICTION_MAX_DEPTH = 64
DEFAULT_DEPICTION_DEADLINE = 30
"""The import's caps and deadlines (docs/configuration.md, "Outbound requests and imports")."""
DEFAULT_PUBLISH_MAX_BYTES = 256 * MIB
DEFAULT_PUBLISH_MAX_UNPACKED_BYTES = 1024 * MIB
"""A .deb's control.tar or data.tar once decompressed: four times the largest .deb accepted by
default. Programs and text unpack to two to four times their xz or zstd size, so a package
as large as may be published fits; what unpacks to more is a bomb, or more than a phone
should install (docs/configuration.md)."""
"""What one worker's caches may hold together, by default (docs/configuration.md)."""
MIN_CONNECTION_BUFFER = 8 * KIB + 64 * KIB
"""72 KiB: a target (URI) over 65,534 bytes must reach the HTTP server's 414 rule first."""
DEFAULT_ARCHITECTURES = "iphoneos-arm64,iphoneos-arm,all,amd64,arm64"
_ARCHITECTURE = re.compile(r"[a-z0-9][a-z0-9-]*")
_MINIMUM = re.compile(r"[0-9]{1,12}(\.[0-9]{1,4})? +[A-Z]{3}")


class Settings(BaseSettings):
    """Deployment settings; every field is ``PKGCAT_<FIELD>`` in the environment."""

    model_config = SettingsConfigDict(env_prefix="PKGCAT_", frozen=True, extra="ignore")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],  # noqa: ARG003  # the hook is called with every source
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,  # noqa: ARG003  # left out: see below
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The arguments given, then the environment; no .env file source.

        None is configured (``pkgcat serve --env-file`` puts the file's values into the
        environment itself: cli/serve.py), yet pydantic-settings' .env source looked every
        field up again at each build, half of the 3 ms a Settings took.
        """
        return init_settings, env_settings, file_secret_settings

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="Database address (SQLAlchemy URL); SQLite is the embedded default.",
    )
    database_pool_size: int = Field(
        default=4,
        ge=1,
        le=100,
        description="PostgreSQL connections each server worker keeps open (SQLite uses one).",
    )
    database_synchronous_counts: bool = Field(
        default=False,
        description=(
            "PostgreSQL: commit each batch of usage and download counts with the database's "
            "own synchronous_commit (a disk flush per batch), so that it also survives a crash "
            "of PostgreSQL or of its machine. Off: committed with synchronous_commit=off, like "
            "SQLite's synchronous=NORMAL, a count survives any server worker being killed, and "
            "such a crash can lose the last fraction of a second of counts."
        ),
    )
    request_deadline: float = Field(
        default=5.0,
        ge=0.1,
        le=60.0,
        description="Seconds an API read may take before it is answered 503 (code 15, `Retry-After`) and not counted: a database that stops answering holds no request longer. Uploads are not bound by it: their size is (`PKGCAT_PUBLISH_MAX_BYTES`).",
    )
    redis_url: str | None = Field(
        default=None,
        description="Redis address (`redis://host:port/db`): when set, the rate limit is kept there and holds across every worker and host.",
    )
    shape: Shape = Field(
        default="A", description="Response shape of the deployment; an application may override it."
    )
    timezone: str = Field(
        default="UTC", description="IANA time zone of applications that do not set their own."
    )
    rate_limit: str = Field(
        default="3600/hour",
        description="Requests allowed per application, across all the operations together (`N/second|minute|hour|day`).",
    )
    rate_limit_storage: str = Field(
        default="memory://",
        description="Older spelling of `PKGCAT_REDIS_URL`: `memory://` (each process counts alone) or a `redis://` address.",
    )
    rate_limit_namespace: str = Field(
        default="pkgcat",
        min_length=1,
        description="Prefix of the rate-limit keys, so several catalogues can share one Redis.",
    )
    host: str = Field(default="127.0.0.1", description="Address `pkgcat serve` listens on.")
    port: int = Field(default=8000, ge=0, le=65535, description="Port `pkgcat serve` listens on.")
    workers: int = Field(default=1, ge=1, le=64, description="Worker processes of `pkgcat serve`.")
    max_connections: int = Field(
        default=4096,
        ge=16,
        le=1_000_000,
        description="Connections each worker of `pkgcat serve` holds open at once; more wait in the listen queue.",
    )
    header_read_timeout: int = Field(
        default=10,
        ge=1,
        le=600,
        description="Seconds a connection has to send a request's headers, from when it opens or its last answer went out; an idle or slow connection is closed after it.",
    )
    # granian has no body timeout: the app bounds the body itself (http/bodies.py).
    body_read_timeout: int = Field(
        default=60,
        ge=1,
        le=3600,
        description="Seconds a request has to send its whole body, from when its headers are in (an upload, a webhook or store write); past it the request is answered 408 and its connection closed, an upload's temporary file removed.",
    )
    # The default is the minimum: a pkgcat request needs well under 2 KB.
    connection_buffer_bytes: int = Field(
        default=MIN_CONNECTION_BUFFER,
        ge=MIN_CONNECTION_BUFFER,
        le=4 * MIB,
        description="Bytes each connection may buffer: a request line and headers past it get 431, and an answer's bytes queued for the socket at once. The default bounds what a slow client can make a worker hold; 417792 (the HTTP server's own default) sends large files faster with PKGCAT_DOWNLOAD_ZERO_COPY.",
    )
    stop_timeout: int = Field(
        default=30,
        ge=1,
        le=3600,
        description="Seconds `pkgcat serve` gives each worker to finish after a stop (Ctrl-C, SIGTERM); a worker still running then is killed (SIGKILL), so a hung or stopped worker cannot hold the server up.",
    )
    auth_failure_limit: str = Field(
        default="20/minute",
        description="Failed authentications allowed per client address (`N/second|minute|hour|day`); past it, the address is refused with 429 until the window ends.",
    )
    public_key_limit: str = Field(
        default="20000/hour",
        description="Licence checks allowed per public key, whichever devices ask (`N/second|minute|hour|day`): how fast one key taken from a tweak could be used to try devices.",
    )
    public_device_limit: str = Field(
        default="60/hour",
        description="Licence checks allowed per device with each public key; a device past it is refused without spending its key's allowance.",
    )
    trusted_proxies: str = Field(
        default="",
        description="Comma-separated addresses or networks of reverse proxies whose `X-Forwarded-For` names the client; empty: the peer address is the client.",
    )
    query_keys: bool = Field(
        default=True,
        description="`false` refuses a key in the query string (`?secret_key=`) with code 5, telling the client to send `Authorization: Bearer`: for deployments whose clients all do, since a proxy's error log keeps whole request lines.",
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        default="info", description="Level of pkgcat's and granian's log lines."
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="Log lines as text for people (`text`) or one JSON object per line (`json`).",
    )
    access_log: bool = Field(
        default=True, description="Whether the server logs one access line per request."
    )
    metrics: bool = Field(
        default=False,
        description="`on` serves Prometheus metrics at `/metrics` (see docs/operators.md#metrics); off by default.",
    )
    metrics_token: SecretStr | None = Field(
        default=None,
        description="When set, `/metrics` answers only a scrape that sends `Authorization: Bearer <token>`.",
    )
    cache_max_bytes: int = Field(
        default=DEFAULT_CACHE_MAX_BYTES,
        ge=1024 * 1024,
        description="Bytes each server worker's caches may hold together (estimated): rendered answers, packages, keys and usage history.",
    )
    architectures: str = Field(
        default=DEFAULT_ARCHITECTURES,
        description="Architectures in order of preference: which record of a package details shows when its newest version is built for several.",
    )

    fetch_allow: str = Field(
        default="",
        description="Comma-separated hosts, `host:port` pairs and networks that outbound requests may reach although they are loopback, private, link-local or otherwise not public; empty: none.",
    )
    fetch_timeout: int = Field(
        default=DEFAULT_FETCH_TIMEOUT,
        ge=1,
        le=3600,
        description="Seconds an outbound request may wait to connect, and between two reads.",
    )
    fetch_deadline: int = Field(
        default=DEFAULT_FETCH_DEADLINE,
        ge=1,
        le=86400,
        description="Seconds the fetch of one repository file (Release, an index) may take in all.",
    )
    fetch_max_bytes: int = Field(
        default=DEFAULT_FETCH_MAX_BYTES,
        ge=1024,
        description="Bytes of one repository file on the wire, and again once its Content-Encoding is decoded.",
    )
    index_max_bytes: int = Field(
        default=DEFAULT_INDEX_MAX_BYTES,
        ge=1024,
        description="Bytes of one Packages index once decompressed (xz, gzip, ...).",
    )
    stanza_max_bytes: int = Field(
        default=DEFAULT_STANZA_MAX_BYTES,
        ge=1024,
        description="Bytes of one stanza of an index; a larger one is skipped with its reason.",
    )
    stanza_max_fields: int = Field(
        default=DEFAULT_STANZA_MAX_FIELDS,
        ge=10,
        description="Fields of one stanza of an index; a stanza with more is skipped with its reason.",
    )
    depiction_max_bytes: int = Field(
        default=DEFAULT_DEPICTION_MAX_BYTES,
        ge=1024,
        description="Bytes of one depiction, on the wire and once decoded.",
    )
    depiction_max_depth: int = Field(
        default=DEFAULT_DEPICTION_MAX_DEPTH,
        ge=4,
        le=1000,
        description="How deeply a depiction's JSON may nest its arrays and objects.",
    )
    depiction_deadline: int = Field(
        default=DEFAULT_DEPICTION_DEADLINE,
        ge=1,
        le=3600,
        description="Seconds the fetch of one depiction may take in all.",
    )

    @field_validator("fetch_allow")
    @classmethod
    def _allowance(cls, value: str) -> str:
        from pkgcat.net.addresses import Allowance

        Allowance.parse(value)  # a ValueError names the entry at fault
        return value

    blob_dir: str | None = Field(
        default=None,
        description="Directory of the stored .deb files when no S3 bucket is set; default: `blobs` beside the SQLite file (on PostgreSQL: `./pkgcat-blobs`).",
    )
    index_dir: str | None = Field(
        default=None,
        description="Directory of the served repository's large index files, sent from disk; default: `indexes` beside the SQLite file (on PostgreSQL: `./pkgcat-indexes`).",
    )
    s3_bucket: str | None = Field(
        default=None,
        description="S3 bucket of the stored .deb files (needs `pkgcat[s3]`); when set, it is used instead of the directory.",
    )
    s3_endpoint: str | None = Field(
        default=None,
        description="Address of an S3-compatible server (`https://s3.example.com`); unset: AWS S3 itself.",
    )
    s3_region: str = Field(default="us-east-1", description="Region of the S3 bucket.")
    s3_prefix: str = Field(
        default="", description="Prefix of every object pkgcat writes in the bucket (`pkgcat/`)."
    )
    s3_access_key_id: str | None = Field(
        default=None, description="S3 access key id; unset: the usual AWS credential chain."
    )
    s3_secret_access_key: SecretStr | None = Field(
        default=None, description="S3 secret access key (a secret: from the environment only)."
    )
    publish_max_bytes: int = Field(
        default=DEFAULT_PUBLISH_MAX_BYTES,
        ge=1024,
        description="Largest .deb file `pkgcat publish` and the upload operation accept, in bytes.",
    )
    publish_max_unpacked_bytes: int = Field(
        default=DEFAULT_PUBLISH_MAX_UNPACKED_BYTES,
        ge=1024,
        description=(
            "Most bytes a published .deb's control.tar or data.tar may hold once decompressed; "
            "a .deb is read as a stream and refused as soon as one passes it."
        ),
    )
    idempotency_seconds: int = Field(
        default=24 * 60 * 60,
        ge=60,
        description="How long the answer of a write sent with an `Idempotency-Key` is kept for its retries, in seconds.",
    )
    idempotency_claim_seconds: int = Field(
        default=300,
        ge=10,
        description="How long a write's `Idempotency-Key` stays claimed by a request that has not answered (its process died, say) before another request of the key may take it over, in seconds.",
    )
    repository_passphrase: SecretStr | None = Field(
        default=None,
        description="Passphrase that seals the repository's OpenPGP signing keys and download-URL key in the database (16 characters or more); without it the repository is served unsigned.",
    )
    repository_url: str | None = Field(
        default=None,
        description="Public address of the served repository (`https://repo.example.com/repo/`): Sileo depiction links in its indexes; unset: none.",
    )
    repository_label: str = Field(
        default="pkgcat",
        min_length=1,
        description="Origin and Label of the served repository's Release (its name in Cydia and Sileo).",
    )
    repository_valid_seconds: int = Field(
        default=0,
        ge=0,
        description="When above 0, Release carries Valid-Until this many seconds ahead (UTC), re-signed at half of it; 0: no Valid-Until.",
    )
    download_url_seconds: int = Field(
        default=120,
        ge=10,
        le=3600,
        description="Lifetime of a signed, single-use download URL of a paid package, in seconds.",
    )
    webhook_passphrase: SecretStr | None = Field(
        default=None,
        description="Passphrase that seals the webhook endpoints' signing secrets in the database (16 characters or more); without it no endpoint can be created and none is delivered to.",
    )
    webhook_allow_loopback: bool = Field(
        default=False,
        description="Accept http:// and loopback addresses (127.0.0.0/8, ::1) for webhook endpoints: for tests and development only.",
    )
    webhook_delivery: Literal["server", "separate"] = Field(
        default="server",
        description="Where webhooks are delivered: `server`, a background thread in each `pkgcat serve` worker; `separate`, only by `pkgcat deliver`.",
    )
    webhook_timeout: float = Field(
        default=10.0,
        gt=0,
        le=60,
        description="Seconds a webhook receiver has to answer 2xx, the whole exchange included.",
    )
    webhook_retry_seconds: float = Field(
        default=30.0,
        gt=0,
        description="Delay before the first retry of a failed delivery; each retry doubles it (with jitter), up to 6 hours.",
    )
    webhook_retry_window: int = Field(
        default=3 * 24 * 3600,
        ge=1,
        description="Seconds an endpoint may fail in a row before it is disabled (3 days).",
    )
    webhook_lease_seconds: float = Field(
        default=5.0,
        ge=1,
        description="How long a deliverer holds an endpoint without a heartbeat; it beats every third of it while its attempts run, however long they take. A deliverer killed outright (its host lost) holds its endpoints that long at most; then another takes them over and sends again the attempt that was under way.",
    )
    webhook_senders: int = Field(
        default=4,
        ge=1,
        le=64,
        description="Endpoints each deliverer sends to at once (a receiver that hangs holds only its own).",
    )

    store_url: str | None = Field(
        default=None,
        description="Public base address of the store, Sileo's payment provider API (`https://shop.example.com/store/`); the repository's payment_endpoint names it. Unset: no store.",
    )
    store_name: str = Field(
        default="pkgcat", min_length=1, description="The store's name, as Sileo shows it."
    )
    store_platform: Literal["none", "test", "stripe"] = Field(
        default="none",
        description="Payment platform of the store: `stripe` (Checkout), `test` completes every purchase at once, marked test; `none`: nothing can be bought.",
    )
    stripe_secret_key: SecretStr | None = Field(
        default=None, description="Stripe secret API key (a secret: from the environment only)."
    )
    stripe_webhook_secret: SecretStr | None = Field(
        default=None,
        description="Signing secret of the store's Stripe webhook endpoint (a secret: from the environment only).",
    )
    stripe_api_base: str | None = Field(
        default=None,
        description="Another address for Stripe's API (a test double); unset: Stripe's own.",
    )
    stripe_connect_webhook_secret: SecretStr | None = Field(
        default=None,
        description="Signing secret of the Stripe webhook endpoint that hears the sellers' connected accounts (Connect: account.updated, payout.paid, payout.failed); from the environment only. Unset: only PKGCAT_STRIPE_WEBHOOK_SECRET is tried.",
    )
    commission_percent: Decimal = Field(
        default=Decimal(0),
        ge=0,
        le=100,
        decimal_places=4,
        description="The deployment's commission on each store sale, in percent of the gross (`15`, `12.5`); a source's own rate (`pkgcat money commission`) overrides it.",
    )
    payout_hold_days: int = Field(
        default=30,
        ge=0,
        le=365,
        description="Days a store sale's proceeds stay pending before they are available to pay out (to absorb refunds and chargebacks).",
    )
    payout_days: str = Field(
        default="1,15",
        description="Days of the month (1 to 28) payouts are made on, comma-separated; `*`: every day. A date the scheduler missed is caught up at its next run.",
    )
    payout_minimum: str = Field(
        default="20 USD",
        description="The least amount paid out, per currency (`20 USD, 20 EUR, 3000 JPY`); a currency not listed is paid out above zero. A source may set a higher threshold.",
    )
    payout_scheduler: Literal["server", "separate"] = Field(
        default="server",
        description="Where payouts are made: `server`, a background thread in each `pkgcat serve` worker of a store with a platform; `separate`, only by `pkgcat money run` (cron, say). Either way each sale is released once and each payout made once.",
    )
    payout_interval: float = Field(
        default=300.0,
        ge=1,
        le=86400,
        description="Seconds between two runs of the payout scheduler in a server worker.",
    )

    @field_validator("payout_days")
    @classmethod
    def _payout_days(cls, value: str) -> str:
        if value.strip() == "*":
            return "*"
        try:
            days = sorted({int(part) for part in value.split(",") if part.strip()})
        except ValueError:
            days = []
        if not days or not all(1 <= day <= 28 for day in days):
            raise ValueError(
                f"{value!r} is not a list of days of the month from 1 to 28 (example: '1,15'), "
                "nor '*' (every day)"
            )
        return ",".join(map(str, days))

    @field_validator("payout_minimum")
    @classmethod
    def _payout_minimum(cls, value: str) -> str:
        parts = [part.strip() for part in value.split(",") if part.strip()]
        if not all(_MINIMUM.fullmatch(part) for part in parts):
            raise ValueError(
                f"{value!r} is not a list of amounts and currencies (example: '20 USD, 3000 JPY')"
            )
        return ", ".join(" ".join(part.split()) for part in parts)

    shop_image_max_bytes: int = Field(
        default=5 * 1024 * 1024,
        ge=1024,
        le=64 * 1024 * 1024,
        description="Largest image (icon, header, screenshot) a seller may upload, in bytes.",
    )
    shop_image_max_pixels: int = Field(
        default=4096 * 4096,
        ge=64 * 64,
        le=100_000_000,
        description=(
            "Most pixels (width times height) an uploaded image may have; a larger one is "
            "refused before it is decoded (a decompression bomb)."
        ),
    )
    shop_gift_days: int = Field(
        default=365,
        ge=1,
        le=3650,
        description="Days a gift code lasts when its seller names no end (codes made, gifts mailed).",
    )
    store_code_seconds: int = Field(
        default=600, ge=60, le=3600, description="Lifetime of an emailed sign-in code, in seconds."
    )
    store_code_limit: str = Field(
        default="5/15 minutes",
        description="Sign-in codes asked for and wrong codes tried, per email address and per client address.",
    )
    store_allow_http: bool = Field(
        default=False,
        description="Allow an http store address and http download URLs (development on loopback only).",
    )
    store_cydia_gate: bool = Field(
        default=False,
        description="Also serve a paid .deb to a request whose X-Unique-ID names a device that bought it (Cydia's gate; forgeable).",
    )
    mail_backend: Literal["smtp", "console"] = Field(
        default="smtp",
        description="How the store sends sign-in codes: `smtp` through PKGCAT_SMTP_HOST, `console` writes each mail to the server's output and log (development only: a store on loopback or in test mode).",
    )
    smtp_host: str | None = Field(
        default=None, description="SMTP server the store's sign-in codes are sent through."
    )
    smtp_port: int = Field(default=587, ge=1, le=65535, description="Port of the SMTP server.")
    smtp_from: str | None = Field(default=None, description="From address of the sign-in mail.")
    smtp_starttls: bool = Field(
        default=True, description="Upgrade the SMTP connection with STARTTLS."
    )
    smtp_username: str | None = Field(
        default=None, description="SMTP user name, when the server wants one."
    )
    smtp_password: SecretStr | None = Field(
        default=None, description="SMTP password (a secret: from the environment only)."
    )

    @field_validator("store_url")
    @classmethod
    def _store_address(cls, value: str | None) -> str | None:
        return value if value is None or value.endswith("/") else value + "/"

    @model_validator(mode="after")
    def _store_ready(self) -> Settings:
        url = self.store_url
        if url is None:
            return self
        if not url.startswith("https://") and not (
            self.store_allow_http and url.startswith("http://")
        ):
            raise ValueError(
                f"PKGCAT_STORE_URL {url!r} is not an https address "
                "(http only with PKGCAT_STORE_ALLOW_HTTP, for development)"
            )
        if self.mail_backend == "console":
            # The code lands in the output and the log: only where nobody else signs in.
            if self.store_platform != "test" and not _on_loopback(url):
                raise ValueError(
                    "PKGCAT_MAIL_BACKEND=console writes sign-in codes to the log: it is for "
                    "development only, with PKGCAT_STORE_PLATFORM=test or a store address "
                    f"on loopback, not {url!r}"
                )
        elif self.smtp_host is None or self.smtp_from is None:
            raise ValueError(
                "the store mails sign-in codes: set PKGCAT_SMTP_HOST and PKGCAT_SMTP_FROM "
                "(or PKGCAT_MAIL_BACKEND=console, for development)"
            )
        live = any(
            secret is not None
            for secret in (
                self.stripe_secret_key,
                self.stripe_webhook_secret,
                self.stripe_connect_webhook_secret,
            )
        )
        if self.store_platform == "test" and live:
            raise ValueError(
                "test mode cannot be on with a live platform's keys: "
                "unset PKGCAT_STRIPE_SECRET_KEY and PKGCAT_STRIPE_WEBHOOK_SECRET, "
                "or set PKGCAT_STORE_PLATFORM=stripe"
            )
        if self.store_platform == "stripe":
            if self.stripe_secret_key is None or self.stripe_webhook_secret is None:
                raise ValueError(
                    "PKGCAT_STORE_PLATFORM=stripe needs PKGCAT_STRIPE_SECRET_KEY "
                    "and PKGCAT_STRIPE_WEBHOOK_SECRET"
                )
            _require(("stripe",), "stripe")
        return self

    demo_receiver_file: str | None = Field(
        default=None,
        description="The demo's webhook receiver: with PKGCAT_DEMO_RECEIVER_SECRET, served at /demo/receiver, each delivery appended to this file (`pkgcat demo` sets both).",
    )
    demo_receiver_secret: SecretStr | None = Field(
        default=None,
        description="The signing secret the demo's webhook receiver checks deliveries with (a secret: from the environment or the demo's settings file only).",
    )

    download_redirect: bool = Field(
        default=False,
        description="Answer a whole download of a free file of the S3 store with a redirect to a presigned address of its object, valid 5 minutes (the bucket's address must be reachable by clients); counted when redirected.",
    )
    download_zero_copy: bool = Field(
        default=False,
        description="Send whole .deb files of the directory store from disk in one message (faster); a download its client cuts short is then counted too.",
    )

    @field_validator("shape", mode="before")
    @classmethod
    def _upper_shape(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        return check_timezone(value)

    @field_validator("architectures")
    @classmethod
    def _architecture_list(cls, value: str) -> str:
        names = [name.strip() for name in value.split(",") if name.strip()]
        bad = [name for name in names if not _ARCHITECTURE.fullmatch(name)]
        if not names or bad:
            raise ValueError(
                f"{value!r} is not a comma-separated list of architectures "
                "(example: 'iphoneos-arm64,iphoneos-arm,all')"
            )
        return ",".join(names)

    @property
    def architecture_preference(self) -> tuple[str, ...]:
        """``architectures`` as a tuple, most preferred first."""
        return tuple(self.architectures.split(","))

    @field_validator("metrics_token")
    @classmethod
    def _long_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 16:
            # Never the value itself: it is a secret.
            raise ValueError(
                "a token needs at least 16 characters (openssl rand -hex 24 makes one)"
            )
        return value

    @field_validator("repository_passphrase", "webhook_passphrase")
    @classmethod
    def _long_passphrase(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError(
                "a passphrase needs at least 16 characters (openssl rand -hex 24 makes one)"
            )
        return value

    @field_validator("s3_bucket")
    @classmethod
    def _s3_installed(cls, value: str | None) -> str | None:
        if value is not None:
            _require(("obstore",), "s3")
        return value

    @field_validator("repository_url")
    @classmethod
    def _repository_address(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("https://", "http://")):
            raise ValueError(
                f"{value!r} is not an http(s) address (https://repo.example.com/repo/)"
            )
        return value if value is None or value.endswith("/") else value + "/"

    @field_validator("database_url")
    @classmethod
    def _database_address(cls, value: str) -> str:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            backend = make_url(value).get_backend_name()
        except (
            ArgumentError,
            ValueError,
        ):  # the address itself is not shown: it may hold a password
            raise ValueError(
                "not a database address; write sqlite:///path/to/pkgcat.db or "
                "postgresql://user:password@host:5432/database"
            ) from None
        if backend not in _BACKEND_MODULES:
            raise ValueError(f"pkgcat runs on sqlite:/// or postgresql://, not {backend!r}")
        _require(_BACKEND_MODULES[backend], "postgres")
        return value

    @property
    def shared_limit_url(self) -> str | None:
        """The Redis that holds the rate limit, if any (``rate_limit_storage`` is its older name)."""
        if self.redis_url is not None:
            return self.redis_url
        return None if self.rate_limit_storage.startswith("memory") else self.rate_limit_storage

    @field_validator("rate_limit_storage")
    @classmethod
    def _known_storage(cls, value: str) -> str:
        scheme = value.partition("://")[0]
        if scheme not in _LIMIT_STORAGES:
            raise ValueError(
                f"{value!r} is not a rate-limit storage; use memory:// or redis://HOST:PORT"
            )
        if scheme != "memory":
            _require(("redis",), "redis")
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_address(cls, value: str | None) -> str | None:
        scheme = None if value is None else value.partition("://")[0]
        if scheme is not None and scheme not in _REDIS_SCHEMES:
            # The scheme alone: the rest of the address may hold a password.
            raise ValueError(
                f"not a Redis address (scheme {scheme!r}); use redis://HOST:PORT/DB or rediss://"
            )
        if value is not None:
            _require(("redis",), "redis")
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_networks(cls, value: str) -> str:
        networks = []
        for part in (part.strip() for part in value.split(",")):
            if not part:
                continue
            try:
                networks.append(str(ipaddress.ip_network(part, strict=False)))
            except ValueError:
                raise ValueError(
                    f"{part!r} is not an address or a network (examples: '10.0.0.5', '10.0.0.0/8')"
                ) from None
        return ",".join(networks)

    @property
    def proxy_networks(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        """``trusted_proxies`` as networks (an address is a network of one)."""
        return tuple(ipaddress.ip_network(n) for n in self.trusted_proxies.split(",") if n)

    @field_validator(
        "rate_limit",
        "auth_failure_limit",
        "store_code_limit",
        "public_key_limit",
        "public_device_limit",
    )
    @classmethod
    def _valid_limit(cls, value: str) -> str:
        try:
            parse(value)
        except ValueError:
            raise ValueError(
                f"{value!r} is not a rate limit; write it like '3600/hour' or '5/minute'"
            ) from None
        return value


def _on_loopback(url: str) -> bool:
    """Whether the address's host is a loopback name or address (127.0.0.0/8, ::1, localhost)."""
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):  # RFC 6761, section 6.3
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _require(modules: tuple[str, ...], extra: str) -> None:
    """Raise ``ValueError`` naming the install command when a backend's driver is missing."""
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except ValueError:  # listed in sys.modules as not importable
            found = False
        if not found:
            raise ValueError(f"needs the {module} driver: pip install 'pkgcat[{extra}]'")


def check_timezone(name: str) -> str:
    """Return ``name`` when it is a known IANA zone, else raise ``ValueError`` naming it."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"{name!r} is not an IANA time zone (examples: 'UTC', 'Europe/Paris')"
        ) from None
    return name
