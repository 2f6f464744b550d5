"""``pkgcat serve``: run the API server (granian, ASGI)."""

from __future__ import annotations

import os
from typing import Annotated

import typer
from granian import Granian
from granian.constants import Interfaces
from granian.log import LogLevels

from pkgcat.app import create_app
from pkgcat.cli._common import fail, load_settings, migrated, stderr


def serve(
    host: Annotated[str | None, typer.Option(help="Address to listen on [PKGCAT_HOST].")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on [PKGCAT_PORT].")] = None,
    workers: Annotated[int | None, typer.Option(help="Worker processes [PKGCAT_WORKERS].")] = None,
) -> None:
    """Migrate the database, then serve the API until interrupted."""
    settings = load_settings(host=host, port=port, workers=workers)
    try:
        create_app(settings)  # fail here, in one line, rather than in every worker
    except Exception as error:  # any setting the app cannot be built from
        fail(str(error), 2)
    migrated(settings)
    if settings.workers > 1 and settings.rate_limit_storage.startswith("memory"):
        stderr.print(
            "warning: with several workers and PKGCAT_RATE_LIMIT_STORAGE=memory://, each worker "
            "keeps its own rate-limit counts; use redis://HOST:PORT to share one limit"
        )
    # Workers build their app from the environment: hand them the effective settings.
    os.environ.update(
        PKGCAT_DATABASE_URL=settings.database_url,
        PKGCAT_HOST=settings.host,
        PKGCAT_PORT=str(settings.port),
        PKGCAT_WORKERS=str(settings.workers),
    )
    stderr.print(
        f"serving the Package Catalogue API on http://{settings.host}:{settings.port} "
        f"({settings.workers} worker{'s' if settings.workers > 1 else ''}, "
        f"shape {settings.shape}, {settings.rate_limit}); docs at /docs"
    )
    Granian(
        target="pkgcat.app:app_from_environment",
        factory=True,
        interface=Interfaces.ASGI,
        address=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_access=False,  # an access line would hold the query, and the query can hold the key
        log_level=LogLevels(settings.log_level),
    ).serve()
