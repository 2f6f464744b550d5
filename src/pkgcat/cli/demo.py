"""``pkgcat demo``: seed a realistic demo catalogue and print its keys."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from pkgcat import demo as catalogue
from pkgcat import demo_store
from pkgcat.cli._common import admin, fail, load_settings, print_json, stdout
from pkgcat.cli._failures import shown_url
from pkgcat.config import Settings
from pkgcat.repository.debs import Refused
from pkgcat.repository.keys import KeyProblem
from pkgcat.storage.admin import AdminError, CatalogueAdmin
from pkgcat.webhooks.endpoints import EndpointRefused

DASHBOARD = "/dashboard"
"""Where ``pkgcat serve`` serves the seller dashboard (``pkgcat.http.dashboard.PATH``, which
this command does not import: it would load the web framework for one string)."""


def _curl(base_url: str, key: str, path: str) -> str:
    return f"curl -H 'Authorization: Bearer {key}' '{base_url}{path}'"


def _record(app: catalogue.DemoApp, settings: Settings, secret_key: str) -> dict[str, str]:
    return {
        "name": app.name,
        "source": app.source,
        "shape": app.shape or settings.shape,
        "timezone": app.timezone or settings.timezone,
        "secret_key": secret_key,
        "paid_package": app.paid_package,
        "free_package": app.free_package,
        "offline_package": app.offline_package,
    }


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
    catalogue_only: Annotated[
        bool,
        typer.Option(
            "--catalogue-only",
            help="Seed the catalogue alone: no .deb published, no signing key, no store settings.",
        ),
    ] = False,
) -> None:
    """Seed an empty database with the demo catalogue and its store, and print the map."""
    settings = load_settings()
    plan = catalogue.build(today=datetime.now(UTC).date())
    store: demo_store.DemoStore | None = None
    with admin(create=True) as handle:
        if not handle.is_empty() and not force:
            if not reuse:
                fail(
                    f"{shown_url(settings.database_url)} holds a catalogue already; "
                    "--force replaces it, --reuse keeps it and prints a fresh demo key"
                )
            first = plan.apps[0]
            try:
                issued = handle.create_key(first.source, first.name)
            except AdminError:
                fail(
                    f"{shown_url(settings.database_url)} holds a catalogue that is not the demo's "
                    f"(no application {first.name!r} of {first.source!r}); --force replaces it"
                )
            if not catalogue_only:
                store = _store(settings, handle, plan)
            if as_json:
                record = {"applications": [_record(first, settings, issued.secret_key)]}
                print_json(record | _store_record(settings, store))
                return
            stdout.print(
                f"kept the existing catalogue; new key for {first.name!r} "
                f"(shape {first.shape or settings.shape}):",
                highlight=False,
            )
            _print_try(settings, issued.secret_key, first)
            _print_store(settings, store)
            return
        issued_keys = handle.load(
            sources=plan.sources,
            applications=plan.applications,
            packages=plan.packages,
            purchases=plan.purchases,
            usage=plan.usage,
            operations=plan.operations,
            devices=plan.devices,
            replace=force,
        )
        if not catalogue_only:
            store = _store(settings, handle, plan)
    apps = [_record(a, settings, issued_keys[a.id].secret_key) for a in plan.apps]
    if as_json:
        print_json({"applications": apps} | _store_record(settings, store))
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
    _print_try(settings, apps[0]["secret_key"], plan.apps[0])
    _print_store(settings, store)


def _store(
    settings: Settings, handle: CatalogueAdmin, plan: catalogue.DemoCatalogue
) -> demo_store.DemoStore:
    try:
        return demo_store.set_up(settings, handle, plan)
    except (demo_store.DemoStoreProblem, Refused, KeyProblem, EndpointRefused) as error:
        fail(f"the demo's store: {error}")


def _store_record(settings: Settings, store: demo_store.DemoStore | None) -> dict[str, object]:
    if store is None:
        return {}
    base = demo_store.base_url(settings)
    return {
        "store": {
            "env_file": str(store.env_file),
            "repository": f"{base}/repo/",
            "key": f"{base}/repo/key.asc",
            "store": store.values["PKGCAT_STORE_URL"],
            "receiver": base + demo_store.RECEIVER,
            "paid_package": store.paid_package,
            "published": store.published,
        }
    }


def _print_store(settings: Settings, store: demo_store.DemoStore | None) -> None:
    """The map of the repository, the store and the webhooks, and how to serve them."""
    if store is None:
        return
    base = demo_store.base_url(settings)
    env_file = _shown_path(store.env_file)
    keyring = "/etc/apt/keyrings/pkgcat.asc"
    stdout.print(
        "\n[bold]the store[/] (test mode: every purchase completes at once, no money is taken):",
        highlight=False,
    )
    lines = [
        f"  serve it   {this_command()} serve --env-file {shlex.quote(env_file)}"
        "   (make run does this; the file holds the demo's passphrases: keep it private)",
        f"  apt        curl -fsS {base}/repo/key.asc | sudo tee {keyring}",
        f"             echo 'deb [signed-by={keyring}] {base}/repo/ ./'"
        " | sudo tee /etc/apt/sources.list.d/pkgcat-demo.list",
        f"  Sileo      add the source {base}/repo/ (Zebra too; the key is {base}/repo/key.asc)",
        f"  buy        {store.values['PKGCAT_STORE_URL']} says how: buy {store.paid_package}"
        " (rootful and rootless files); the sign-in code is printed in the server's log, not"
        " mailed; Sileo and Zebra buy only from a store served over https",
        f"  webhooks   {base}{demo_store.RECEIVER} lists every event delivered, signature checked",
    ]
    for line in lines:
        stdout.print(line, markup=False, highlight=False, soft_wrap=True)


def _shown_path(path: Path) -> str:
    """The path as typed from the current folder when it lies below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def this_command() -> str:
    """How to run this very ``pkgcat`` from a shell, in the folder it was run from.

    ``pkgcat`` when the shell finds this one on its PATH; else the path it was started by
    (``make run`` starts ``.venv/bin/pkgcat``, which is on no PATH); else through Python."""
    started = Path(sys.argv[0])
    if started.name == "pkgcat" and os.access(started, os.X_OK):
        found = shutil.which("pkgcat")
        if found is not None and os.path.samefile(found, started):
            return "pkgcat"
        return shlex.quote(str(started) if started.parent != Path() else f"./{started}")
    return f"{shlex.quote(sys.executable)} -m pkgcat"


def _print_try(settings: Settings, key: str, app: catalogue.DemoApp) -> None:
    base_url = f"http://{settings.host}:{settings.port}"
    stdout.print(f"\nsecret key: [bold]{key}[/]", highlight=False)
    # The key goes into the page's sign-in form, never into its address.
    stdout.print(
        f"dashboard: [bold]{base_url}{DASHBOARD}[/] (sign in with the secret key above)",
        highlight=False,
        soft_wrap=True,
    )
    stdout.print("try:", highlight=False)
    for path in (
        "/1.0/application/usage.json?days=7",
        f"/1.0/package/details.json?package={app.paid_package}",
        f"/1.0/package/buyers.json?package={app.paid_package}&limit=5",
    ):
        stdout.print("  " + _curl(base_url, key, path), highlight=False, soft_wrap=True)
    stdout.print("or, with pkgcat's own client (it reads the key from the environment):")
    for line in (
        f"export PKGCAT_SECRET_KEY={key}",
        f"{this_command()} client package {app.paid_package} --base-url {base_url}",
    ):
        stdout.print("  " + line, highlight=False, soft_wrap=True)
