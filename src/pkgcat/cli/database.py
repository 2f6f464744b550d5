"""``pkgcat db``: the database schema."""

from __future__ import annotations

import typer

from pkgcat.cli._common import load_settings, migrated, stdout
from pkgcat.storage.migrate import current_revision

app = typer.Typer(help="Database schema.", no_args_is_help=True)


@app.command("upgrade")
def upgrade() -> None:
    """Bring the database (PKGCAT_DATABASE_URL) to the current schema."""
    settings = migrated(load_settings())
    stdout.print(f"database at revision {current_revision(settings.database_url)}")
