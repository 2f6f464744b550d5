"""The demo's store: what turns the seeded catalogue into a repository that signs and sells.

:func:`set_up` runs after the catalogue is loaded (``pkgcat demo``), and again, changing
nothing that is already there, on ``pkgcat demo --reuse``:

- a real .deb for every online demo package (:mod:`pkgcat.demo_debs`), both iOS
  architectures for each source's first paid package, published to its source as
  ``pkgcat publish`` would, dated by the package's release;
- a signing key, sealed with a passphrase made for this demo;
- a webhook endpoint of the first application, pointing at the receiver the demo serves
  (``/demo/receiver``, :mod:`pkgcat.http.demo_receiver`), for every event type.

What ``pkgcat serve`` needs to serve all of it is written to the demo's settings file
(:func:`env_file_for`: ``pkgcat-demo.env`` beside the SQLite file, owner-only), which
``pkgcat serve --env-file`` reads: the passphrases (made at random for this demo, never a
default a real deployment could inherit), the store in test mode on the loopback address
with the console mail backend, and the receiver's signing secret.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from dotenv import dotenv_values
from pydantic import SecretStr
from sqlalchemy import Engine

from pkgcat.config import Settings
from pkgcat.demo import DemoCatalogue
from pkgcat.demo_debs import deb
from pkgcat.events import NAMES as EVENT_TYPES
from pkgcat.repository.debs import DebLimits
from pkgcat.repository.keys import create_key, list_keys
from pkgcat.repository.publish import publish
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.backends import open_blobs
from pkgcat.storage.engine import backend_name
from pkgcat.storage.sqlite.connection import sqlite_path
from pkgcat.storage.webhooks import WebhookStore
from pkgcat.versions import Preference
from pkgcat.webhooks.endpoints import Endpoints, allowance

ENV_FILE = "pkgcat-demo.env"
RECEIVER = "/demo/receiver"
"""Where ``pkgcat serve`` serves the demo's webhook receiver (:mod:`pkgcat.http.demo_receiver`)."""
ARCHITECTURES = ("iphoneos-arm", "iphoneos-arm64")
"""Rootful and rootless iOS: the first paid package of each source is built for both."""


class DemoStoreProblem(Exception):
    """The demo's store cannot be set up as asked; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class DemoStore:
    """What the demo set up, for the map ``pkgcat demo`` prints."""

    env_file: Path
    values: dict[str, str]
    published: int
    """Files published by this run (0 when every one was there already)."""
    paid_package: str
    """A paid package with files for both architectures."""


def env_file_for(settings: Settings) -> Path:
    """Beside the SQLite file; for another database, in the current folder."""
    if backend_name(settings.database_url) == "sqlite":
        database = sqlite_path(settings.database_url)
        return Path(database).resolve().parent / ENV_FILE
    return Path(ENV_FILE).resolve()


def base_url(settings: Settings) -> str:
    """The address the demo is served at (``pkgcat serve``'s host and port)."""
    host = settings.host if ":" not in settings.host else f"[{settings.host}]"
    return f"http://{host}:{settings.port}"


def read_env_file(path: Path) -> dict[str, str]:
    """The ``PKGCAT_*`` values of a settings file (none when it does not exist)."""
    if not path.is_file():
        return {}
    return {k: v for k, v in dotenv_values(path).items() if k.startswith("PKGCAT_") and v}


def _quoted(value: str) -> str:
    """A value in single quotes, as python-dotenv reads it back to the letter (no ``${...}``
    expansion, no comment): only a backslash and a quote are escaped there."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _write_env_file(path: Path, values: Mapping[str, str]) -> None:
    """Write the file whole, owner-only, or not at all (a temporary file renamed over it)."""
    lines = [
        "# pkgcat's demo settings, made by `pkgcat demo`; `pkgcat serve --env-file` reads them.",
        "# The passphrases and the receiver's secret were made for this demo: keep this file",
        "# private (it is readable by its owner only), and never reuse them in a deployment.",
        *(f"{name}={_quoted(value)}" for name, value in values.items()),
    ]
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=".pkgcat-demo-", suffix=".env")
    try:
        with os.fdopen(handle, "w") as file:  # mkstemp makes it 0600
            file.write("\n".join(lines) + "\n")
        Path(name).replace(path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def _pick(name: str, given: SecretStr | None, kept: Mapping[str, str]) -> str:
    """A secret from the environment, else the one this demo made before, else a new one."""
    if given is not None:
        return given.get_secret_value()
    return kept.get(name) or secrets.token_hex(24)


def _files(plan: DemoCatalogue) -> Iterable[tuple[dict[str, Any], str, str]]:
    """Each (package, architecture, source name) the demo publishes."""
    names = {source["id"]: source["name"] for source in plan.sources}
    first_paid = {app.paid_package for app in plan.apps}
    for package in plan.packages:
        if not package["online"]:  # offline: not served, and a publish would bring it back
            continue
        both = package["package"] in first_paid
        for architecture in ARCHITECTURES if both else ("iphoneos-arm64",):
            yield package, architecture, names[package["source_id"]]


async def _publish_all(settings: Settings, engine: Engine, plan: DemoCatalogue, work: Path) -> int:
    blobs = open_blobs(settings)
    made = 0
    try:
        for package, architecture, source in _files(plan):
            path = work / f"{package['package']}_{architecture}.deb"
            path.write_bytes(deb(package, architecture))
            done = await publish(
                engine,
                blobs,
                path,
                source,
                limits=DebLimits.from_settings(settings),
                preference=Preference(settings.architecture_preference),
                now=package["released_at"],  # its release date stays the catalogue's
            )
            made += done.created
    finally:
        await blobs.close()
    return made


def set_up(settings: Settings, admin: CatalogueAdmin, plan: DemoCatalogue) -> DemoStore:
    """Publish, sign, and point a webhook at the demo's receiver; write the settings file."""
    engine = admin.engine
    path = env_file_for(settings)
    kept = read_env_file(path)
    repository = _pick("PKGCAT_REPOSITORY_PASSPHRASE", settings.repository_passphrase, kept)
    webhooks = _pick("PKGCAT_WEBHOOK_PASSPHRASE", settings.webhook_passphrase, kept)
    lost = "PKGCAT_REPOSITORY_PASSPHRASE" not in kept and settings.repository_passphrase is None
    if lost and list_keys(engine):
        raise DemoStoreProblem(
            f"the catalogue has signing keys, but {path} (the demo's passphrase) is gone; "
            "pkgcat demo --force makes the demo again"
        )
    with tempfile.TemporaryDirectory(prefix="pkgcat-demo-") as work:
        published = anyio.run(_publish_all, settings, engine, plan, Path(work))
    # The control files carry no screenshots: each package's page as the catalogue had it.
    admin.set_pages(package for package in plan.packages if package["online"])
    if not any(key.retired_at is None for key in list_keys(engine)):
        create_key(engine, repository, settings.repository_label)
    base = base_url(settings)
    receiver = base + RECEIVER
    secret = kept.get("PKGCAT_DEMO_RECEIVER_SECRET")
    endpoints = Endpoints(
        WebhookStore(engine),
        passphrase=webhooks,
        allowed=allowance(settings.fetch_allow, allow_loopback=True),
        allow_http=True,
    )
    first = plan.apps[0]
    existing = [e for e in endpoints.list(first.id) if e.url == receiver]
    if not existing:
        secret = endpoints.create(first.id, receiver, EVENT_TYPES).secret
    elif secret is None:  # the file was lost: a new secret the receiver will know
        secret = endpoints.roll_secret(first.id, existing[0].endpoint_id).secret
    values = {
        "PKGCAT_DATABASE_URL": settings.database_url,
        "PKGCAT_REPOSITORY_PASSPHRASE": repository,
        "PKGCAT_REPOSITORY_URL": f"{base}/repo/",
        "PKGCAT_STORE_URL": f"{base}/store/",
        "PKGCAT_STORE_ALLOW_HTTP": "true",
        "PKGCAT_STORE_PLATFORM": "test",
        "PKGCAT_STORE_NAME": "pkgcat demo store",
        "PKGCAT_MAIL_BACKEND": "console",
        "PKGCAT_WEBHOOK_PASSPHRASE": webhooks,
        "PKGCAT_WEBHOOK_ALLOW_LOOPBACK": "true",
        "PKGCAT_DEMO_RECEIVER_SECRET": secret,
        "PKGCAT_DEMO_RECEIVER_FILE": str(path.with_name("pkgcat-demo-deliveries.jsonl")),
    }
    _write_env_file(path, values)
    return DemoStore(path, values, published, first.paid_package)
