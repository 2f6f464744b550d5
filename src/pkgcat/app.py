"""The application factory: settings in, a wired ASGI app out.

Nothing is built at import time. ``pkgcat serve`` hands
:func:`app_from_environment` to the server, which calls it once per worker.
"""

from __future__ import annotations

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


def app_from_environment() -> ApiApp:
    """The server's factory: settings from ``PKGCAT_*`` variables."""
    return create_app(Settings())
