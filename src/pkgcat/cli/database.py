"""``pkgcat init`` and ``pkgcat migrate``: the two commands that may create a database."""

from __future__ import annotations

from pkgcat.cli._common import engine_of, fail, load_settings, migrated, opened, stdout
from pkgcat.cli._failures import shown_url
from pkgcat.storage.migrate import current_revision


def init() -> None:
    """Create a new, empty catalogue in PKGCAT_DATABASE_URL (a SQLite file is created)."""
    settings = load_settings()
    shown = shown_url(settings.database_url)
    with engine_of(settings) as engine:
        existing = current_revision(engine)  # a missing SQLite file is created empty
        if existing is not None:
            fail(
                f"{shown} holds a catalogue already (revision {existing}); "
                "`pkgcat migrate` upgrades it"
            )
        migrated(settings, create=True, engine=engine)
        stdout.print(
            f"created an empty catalogue in {shown} (revision {current_revision(engine)})",
            highlight=False,
            soft_wrap=True,
        )
        if settings.repository_passphrase is not None:  # else: `pkgcat repo key create` later
            from pkgcat.cli.repo import make_key

            made = make_key(settings, engine)
            stdout.print(
                f"made the repository's signing key {made.fingerprint}",
                highlight=False,
                soft_wrap=True,
            )


def migrate() -> None:
    """Bring the database (PKGCAT_DATABASE_URL) to the current schema, creating it if missing."""
    settings = load_settings()
    with opened(settings, create=True) as engine:
        revision = current_revision(engine)
    stdout.print(
        f"{shown_url(settings.database_url)} at revision {revision}",
        highlight=False,
        soft_wrap=True,
    )
