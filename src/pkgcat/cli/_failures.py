"""Errors from the database, told as one line (never the driver's or SQLAlchemy's page of text)."""

from __future__ import annotations

import os
import re

_DATABASE_PACKAGES = frozenset({"sqlalchemy", "alembic", "sqlite3", "psycopg", "asyncpg"})


_SECRET_PARAMETERS = re.compile(r"([?&](?:ssl)?password=)[^&]*", re.IGNORECASE)
"""Query parameters the drivers read a password from (``?password=`` works like ``user:pw@``)."""


def shown_url(address: str) -> str:
    """A database or Redis address fit for a terminal or a log: every password masked."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        shown = make_url(address).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        return "(an unreadable address)"
    return _SECRET_PARAMETERS.sub(r"\1***", shown)


def first_line(error: BaseException) -> str:
    """The first line of what the driver said (SQLAlchemy's wrapper, its SQL and its link dropped)."""
    cause = getattr(error, "orig", None) or error
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    return lines[0] if lines else type(cause).__name__


def database_failure(error: BaseException) -> str | None:
    """One line for an error raised by the database or its drivers; ``None`` for any other."""
    if type(error).__module__.split(".")[0] not in _DATABASE_PACKAGES:
        return None
    from pkgcat.config import DEFAULT_DATABASE_URL

    url = os.environ.get("PKGCAT_DATABASE_URL", DEFAULT_DATABASE_URL)
    return f"database {shown_url(url)}: {first_line(error)}"
