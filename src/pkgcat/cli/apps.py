"""``pkgcat app``: applications, the callers of the API."""

from __future__ import annotations

from typing import Annotated

import typer

from pkgcat.cli._common import admin, fail, load_settings, print_json, stdout
from pkgcat.config import check_timezone
from pkgcat.domain import Shape
from pkgcat.storage.admin import IssuedKey

app = typer.Typer(help="Applications and their keys.", no_args_is_help=True)


def show_key(issued: IssuedKey, as_json: bool) -> None:
    """Print a new key once: it is never shown again."""
    settings = load_settings()
    app_ = issued.application
    record = {
        "name": app_.name,
        "source": issued.source.name,
        "shape": app_.shape or settings.shape,
        "timezone": app_.timezone or settings.timezone,
        "secret_key": issued.secret_key,
    }
    if as_json:
        print_json(record)
        return
    stdout.print(
        f"application {app_.name!r} of {issued.source.name!r} "
        f"(shape {record['shape']}, time zone {record['timezone']})",
        markup=False,
        highlight=False,
    )
    stdout.print(f"secret key (shown once, store it now): [bold]{issued.secret_key}[/]")


@app.command("create")
def create(
    source: Annotated[str, typer.Option("--source", help="Source the application belongs to.")],
    name: Annotated[str, typer.Option("--name", help="Name of the application.")],
    shape: Annotated[
        str | None, typer.Option("--shape", help="A or B; default: PKGCAT_SHAPE.")
    ] = None,
    timezone: Annotated[
        str | None, typer.Option("--timezone", help="IANA zone; default: PKGCAT_TIMEZONE.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Create an application and print its first secret key, once."""
    chosen: Shape | None = None
    if shape is not None:
        if shape.upper() not in ("A", "B"):
            fail(f"--shape: {shape!r} is not a shape; use A or B", 2)
        chosen = "A" if shape.upper() == "A" else "B"
    if timezone is not None:
        try:
            check_timezone(timezone)
        except ValueError as error:
            fail(f"--timezone: {error}", 2)
    with admin() as handle:
        issued = handle.create_application(source, name, shape=chosen, timezone=timezone)
    show_key(issued, as_json)
