"""The application factory: settings in, a wired ASGI app out.

Nothing is built at import time. ``pkgcat serve`` hands
:func:`app_from_environment` to the server, which calls it once per worker.
"""

from __future__ import annotations

import gc
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING

from pkgcat.access_log import access_log_for
from pkgcat.config import Settings
from pkgcat.errors import NotReady
from pkgcat.http.asgi import ApiApp
from pkgcat.http.money import Desk
from pkgcat.http.repository import RepositoryApp
from pkgcat.http.routes import (
    LICENCE_ROUTES,
    MONEY_ROUTES,
    ROUTES,
    WEBHOOK_ROUTES,
    WRITE_ROUTES,
    operation_name,
)
from pkgcat.http.site import Background, create_site
from pkgcat.http.throttle import AuthThrottle
from pkgcat.licences import LicenceService
from pkgcat.repository.indexes import PoolEntry
from pkgcat.repository.served import ServedRepository
from pkgcat.repository.uploads import Uploads
from pkgcat.services import CatalogueService, Clock, utc_now
from pkgcat.storage.backends import (
    database_unavailable,
    open_blobs,
    open_failure_limiter,
    open_index_blobs,
    open_public_limits,
    open_storage,
    open_write_engine,
)
from pkgcat.storage.writes.idempotency import Answers
from pkgcat.webhooks.managed import Managed

if TYPE_CHECKING:
    from starlette.routing import BaseRoute
    from starlette.types import ASGIApp

    from pkgcat.store.service import Store


def create_app(settings: Settings, *, clock: Clock = utc_now) -> ApiApp:
    """Pick the catalogue, counter and limiter the settings name, and mount the routes."""
    storage = open_storage(settings)
    metrics = None
    if settings.metrics:  # imported only when on: off, metrics cost nothing
        from pkgcat.metrics import Metrics

        token = settings.metrics_token
        # Labelled by the table's names, as usage by=operation names them.
        every = (*ROUTES, *WRITE_ROUTES, *WEBHOOK_ROUTES, *LICENCE_ROUTES, *MONEY_ROUTES)
        names = {path: operation_name(path) for path in every}
        metrics = Metrics(storage, names, token.get_secret_value() if token else None)
    service = CatalogueService(
        storage.catalogue,
        storage.usage,
        storage.limiter,
        default_shape=settings.shape,
        default_timezone=settings.timezone,
        clock=clock,
    )
    throttle = AuthThrottle(open_failure_limiter(settings), proxies=settings.proxy_networks)

    engine = open_write_engine(settings)
    served = ServedRepository(
        settings,
        open_blobs(settings),
        storage.catalogue.latest_generation,
        engine,
        published=open_index_blobs(settings),
    )
    uploads = Uploads(settings, served.blobs, engine)
    public_limits = open_public_limits(settings)
    licences = LicenceService(
        service,
        storage.catalogue,
        public_limits,
        engine,
        clock=lambda: clock().timestamp(),
    )
    answers = Answers(
        engine, ttl=settings.idempotency_seconds, bound=settings.idempotency_claim_seconds
    )

    async def count_download(entry: PoolEntry, count: int) -> None:
        # Counted on the UTC day: a device tells no time zone.
        day = clock().astimezone(UTC).date()
        await storage.usage.record_download(entry.package, day, count)

    webhooks = Managed(settings, engine)
    access_log = access_log_for(settings)
    background: list[Background] = []
    # Without the passphrase no endpoint exists, nor could a secret be opened to sign.
    if settings.webhook_delivery == "server" and settings.webhook_passphrase is not None:
        from pkgcat.webhooks.delivery import InProcess

        background.append(InProcess(settings, metrics))
    store = None
    if settings.store_url is not None:  # imported only when on
        from pkgcat.store.service import Store

        store = Store(settings, served, engine)
        if settings.store_platform != "none" and settings.payout_scheduler == "server":
            from pkgcat.money.scheduler import InProcess as Payouts

            background.append(Payouts(settings))

    async def ready() -> dict[str, object]:
        found = await storage.readiness()
        try:
            await served.blobs.ready()
        except Exception as error:  # the object store down: no download or upload works
            raise NotReady(f"object store: {type(error).__name__}", found) from error
        return found

    async def started() -> None:
        await storage.start()
        served.start()  # the indexes followed from the worker's start, requested or not

    async def close() -> None:
        if access_log is not None:
            access_log.flush()  # and again at the process's exit, for answers still going out
        await served.close()
        if store is not None:
            await store.close()
        webhooks.close()
        engine.dispose()
        await storage.close()
        await throttle.close()
        await public_limits.close()

    site = create_site(
        on_shutdown=close,
        on_startup=started,
        ready=ready,
        throttle=throttle,
        metrics=metrics,
        repository=RepositoryApp(
            served,
            count_download,
            zero_copy=settings.download_zero_copy,
            redirect=settings.download_redirect,
            payment_endpoint=settings.store_url,
            cydia_gate=settings.store_cydia_gate,
            client=throttle.client,
            reachable=storage.usage.reachable,
            unavailable=database_unavailable,
            deadline=settings.request_deadline,
        ),
        background=background,
        store=None if store is None else _store_app(store, throttle),
        extra=_demo_receiver(settings),
    )
    return ApiApp(
        service,
        site,
        throttle,
        unavailable=database_unavailable,
        cache_bytes=settings.cache_max_bytes,
        metrics=metrics,
        query_keys=settings.query_keys,
        access_log=access_log,
        deadline=settings.request_deadline,
        body_timeout=settings.body_read_timeout,
        uploads=uploads,
        webhooks=webhooks,
        money=Desk(settings, engine),
        licences=licences,
        answers=answers,
    )


def _store_app(store: Store, throttle: AuthThrottle) -> ASGIApp:
    from pkgcat.http.store import create_store_app

    return create_store_app(store, throttle.client)


def _demo_receiver(settings: Settings) -> list[BaseRoute]:
    """The demo's webhook receiver, when the demo's settings name it."""
    secret = settings.demo_receiver_secret
    if settings.demo_receiver_file is None or secret is None:
        return []
    from pkgcat.http.demo_receiver import receiver_route

    return [receiver_route(Path(settings.demo_receiver_file), secret.get_secret_value())]


GC_THRESHOLDS = (20_000, 20, 20)
"""Collections rarer than the default (700, 10, 10): a request allocates a few
hundred objects, nearly all freed at once by reference counting."""


def app_from_environment() -> ApiApp:
    """The server's factory: settings from ``PKGCAT_*`` variables."""
    app = create_app(Settings())
    # Everything alive now (modules, settings, the app) lives as long as the worker:
    # moved out of the collector's sight, full collections no longer walk it, which
    # took tens of milliseconds at a time under load (the p99 of docs/benchmarks.md).
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    return app
