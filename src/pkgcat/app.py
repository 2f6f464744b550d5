"""The application factory: settings in, a wired ASGI app out.

Nothing is built at import time. ``pkgcat serve`` hands
:func:`app_from_environment` to the server, which calls it once per worker.
"""

from __future__ import annotations

import gc

from sqlalchemy.engine import make_url

from pkgcat.config import Settings
from pkgcat.http.asgi import ApiApp
from pkgcat.http.site import create_site
from pkgcat.services import CatalogueService, Clock, utc_now
from pkgcat.storage.limiter import WindowLimiter
from pkgcat.storage.sqlite import SqliteCatalogue


def create_app(settings: Settings, *, clock: Clock = utc_now) -> ApiApp:
    """Pick the store, counter and limiter the settings name, and mount the routes."""
    backend = make_url(settings.database_url).get_backend_name()
    if backend != "sqlite":
        raise ValueError(f"PKGCAT_DATABASE_URL: the server runs on SQLite for now, not {backend!r}")
    store = SqliteCatalogue(settings.database_url)
    limiter = WindowLimiter(
        settings.rate_limit, settings.rate_limit_storage, settings.rate_limit_namespace
    )
    service = CatalogueService(
        store,
        store,
        limiter,
        default_shape=settings.shape,
        default_timezone=settings.timezone,
        clock=clock,
    )
    return ApiApp(service, create_site(on_shutdown=store.close))


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
