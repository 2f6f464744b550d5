"""``pkgcat demo``: seed a realistic demo catalogue and print its keys."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer

from pkgcat import demo as catalogue
from pkgcat.cli._common import admin, fail, load_settings, print_json, stdout

BASE_URL = "http://127.0.0.1:8000"


def _curl(settings_port: int, key: str, path: str) -> str:
    return f"curl -H 'Authorization: Bearer {key}' '{BASE_URL.rsplit(':', 1)[0]}:{settings_port}{path}'"


def demo(
    force: Annotated[
        bool, typer.Option("--force", help="Replace a catalogue the database already holds.")
    ] = False,
    reuse: Annotated[
        bool,
        typer.Option(
            "--reuse",
            help="If the database holds a catalogue already, keep it and print a fresh demo key.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the applications as JSON.")
    ] = False,
) -> None:
    """Seed an empty database with the demo catalogue and print a key per application."""
    settings = load_settings()
    plan = catalogue.build(today=datetime.now(UTC).date())
    with admin() as handle:
        if not handle.is_empty() and not force:
            if not reuse:
                fail(
                    f"{settings.database_url} holds a catalogue already; "
                    "--force replaces it, --reuse keeps it and prints a fresh demo key"
                )
            first = plan.apps[0]
            issued = handle.create_key(first.source, first.name)
            stdout.print(
                f"kept the existing catalogue; new key for {first.name!r} "
                f"(shape {first.shape or settings.shape}):",
                highlight=False,
            )
            _print_try(settings.port, issued.secret_key, first)
            return
        issued_keys = handle.load(
            sources=plan.sources,
            applications=plan.applications,
            packages=plan.packages,
            purchases=plan.purchases,
            usage=plan.usage,
            replace=force,
        )
    apps = [
        {
            "name": a.name,
            "source": a.source,
            "shape": a.shape or settings.shape,
            "timezone": a.timezone or settings.timezone,
            "secret_key": issued_keys[a.id].secret_key,
            "paid_package": a.paid_package,
            "free_package": a.free_package,
            "offline_package": a.offline_package,
        }
        for a in plan.apps
    ]
    if as_json:
        print_json({"applications": apps})
        return
    stdout.print(
        f"demo catalogue: {len(plan.sources)} sources, {len(plan.packages)} packages, "
        f"{len(plan.purchases)} purchases, {len(apps)} applications"
    )
    for a in apps:
        stdout.print(
            f"  {a['name']:<16} {a['source']:<12} shape {a['shape']}  {a['timezone']:<13} {a['secret_key']}",
            highlight=False,
            soft_wrap=True,
        )
    _print_try(settings.port, apps[0]["secret_key"], plan.apps[0])


def _print_try(port: int, key: str, app: catalogue.DemoApp) -> None:
    stdout.print(f"\nsecret key: [bold]{key}[/]\ntry:", highlight=False)
    for path in (
        "/1.0/application/usage.json?days=7",
        f"/1.0/package/details.json?package={app.paid_package}",
        f"/1.0/package/buyers.json?package={app.paid_package}&limit=5",
    ):
        stdout.print("  " + _curl(port, key, path), highlight=False, soft_wrap=True)
