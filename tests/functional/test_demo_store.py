"""The demo's store without a browser: its settings file, what ``--reuse`` keeps, the receiver's
checks, and ``pkgcat serve --env-file`` (the end-to-end run is tests/browser/test_demo_store.py)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from dotenv import dotenv_values
from starlette.testclient import TestClient
from typer.testing import CliRunner

from pkgcat.app import create_app
from pkgcat.cli import app as cli
from pkgcat.cli.serve import read_env_file
from pkgcat.config import Settings
from pkgcat.http.demo_receiver import render
from pkgcat.storage.engine import engine_for
from pkgcat.storage.webhooks import WebhookStore
from tests.servers import PKGCAT, environment, free_port, serving


def _store(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    found: dict[str, Any] = json.loads(result.stdout)["store"]
    return found


def test_reuse_keeps_the_settings_file_and_changes_nothing_that_is_there(run: Any) -> None:
    first = _store(run("demo", "--json"))
    env_file = Path(first["env_file"])
    assert first["published"] == 8  # six online packages, two of them for both architectures
    assert env_file.stat().st_mode & 0o777 == 0o600
    made = dotenv_values(env_file)
    assert made["PKGCAT_STORE_PLATFORM"] == "test"
    assert made["PKGCAT_MAIL_BACKEND"] == "console"
    assert len(str(made["PKGCAT_REPOSITORY_PASSPHRASE"])) >= 32
    assert made["PKGCAT_REPOSITORY_PASSPHRASE"] != made["PKGCAT_WEBHOOK_PASSPHRASE"]
    again = _store(run("demo", "--reuse", "--json"))
    assert again["published"] == 0
    assert dotenv_values(env_file) == made
    engine = engine_for(run.url)
    try:
        endpoints = WebhookStore(engine).of_application(1)
    finally:
        engine.dispose()
    assert [e.url for e in endpoints] == [first["receiver"]]


def test_a_demo_whose_settings_file_is_gone_is_refused_not_half_made(run: Any) -> None:
    env_file = Path(_store(run("demo", "--json"))["env_file"])
    env_file.unlink()
    refused = run("demo", "--reuse")
    assert refused.exit_code == 1
    assert "pkgcat-demo.env" in refused.output
    assert "--force" in refused.output
    assert not env_file.exists()
    assert _store(run("demo", "--force", "--json"))["published"] == 8
    assert env_file.exists()


def _signed(body: bytes, secret: str, at: int | None = None) -> str:
    """``Pkgcat-Signature`` as docs/webhooks.md says a delivery carries it."""
    stamp = int(time.time()) if at is None else at
    mac = hmac.new(secret.encode(), f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={stamp},v1={mac}"


def test_the_receiver_takes_genuine_deliveries_and_refuses_others(
    tmp_path: Path, database_url: str
) -> None:
    secret = "whsec_demo_receiver_test_secret"
    deliveries = tmp_path / "deliveries.jsonl"
    settings = Settings(
        database_url=database_url,
        demo_receiver_file=str(deliveries),
        demo_receiver_secret=secret,
    )
    event = {"id": "evt_1", "type": "sale.completed", "data": {"package": "<script>x</script>"}}
    body = json.dumps(event).encode()
    with TestClient(create_app(settings)) as http:
        good = http.post(
            "/demo/receiver", content=body, headers={"pkgcat-signature": _signed(body, secret)}
        )
        assert good.status_code == 200
        forged = http.post(
            "/demo/receiver", content=body, headers={"pkgcat-signature": _signed(body, "wrong")}
        )
        assert forged.status_code == 400
        stale = http.post(
            "/demo/receiver",
            content=body,
            headers={"pkgcat-signature": _signed(body, secret, int(time.time()) - 3600)},
        )
        assert stale.status_code == 400
        page = http.get("/demo/receiver")
    assert page.status_code == 200
    assert "script-src" not in page.headers["content-security-policy"]  # no script at all
    assert "<script>" not in page.text
    assert "&lt;script&gt;" in page.text
    assert page.text.count("signature checked") == 1
    assert page.text.count("refused:") == 2
    assert len(deliveries.read_text().splitlines()) == 3


def test_without_its_settings_there_is_no_receiver(database_url: str) -> None:
    with TestClient(create_app(Settings(database_url=database_url))) as http:
        assert http.post("/demo/receiver", content=b"{}").status_code == 404


def test_an_empty_receiver_page_says_what_to_do() -> None:
    assert "No delivery yet" in render([])


def test_the_env_file_fills_only_what_the_environment_does_not_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / "settings.env"
    env_file.write_text("PKGCAT_STORE_NAME=from the file\nPKGCAT_SHAPE=B\nOTHER=ignored\n")
    monkeypatch.setenv("PKGCAT_SHAPE", "A")
    monkeypatch.delenv("PKGCAT_STORE_NAME", raising=False)
    monkeypatch.delenv("OTHER", raising=False)
    read_env_file(env_file)
    assert os.environ["PKGCAT_STORE_NAME"] == "from the file"
    assert os.environ["PKGCAT_SHAPE"] == "A"
    assert "OTHER" not in os.environ


def test_a_database_address_with_shell_and_dotenv_characters_comes_back_to_the_letter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings file is read by python-dotenv, which expands ``${...}`` and cuts at ``#``
    in unquoted values: each value is written single-quoted."""
    url = f"sqlite:///{tmp_path}/a $HOME #x 'q' \\b.db"
    monkeypatch.setenv("PKGCAT_DATABASE_URL", url)
    runner = CliRunner()
    made = runner.invoke(cli, ["demo", "--json"], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    env_file = Path(json.loads(made.stdout)["store"]["env_file"])
    assert dotenv_values(env_file)["PKGCAT_DATABASE_URL"] == url


@pytest.mark.server
@pytest.mark.slow
def test_every_address_the_demo_prints_answers(tmp_path: Path) -> None:
    """What ``make run`` shows a newcomer: each address of the map, opened as printed (the API's
    with the printed key), answers 200 from ``pkgcat serve --env-file`` with the demo's file."""
    port = free_port()
    env = environment(f"sqlite:///{tmp_path / 'pkgcat.db'}", port=str(port))
    made = subprocess.run(
        [PKGCAT, "demo"], env=env, capture_output=True, text=True, check=True, cwd=tmp_path
    )
    printed = made.stdout
    [key] = re.findall(r"^secret key: (\S+)$", printed, re.MULTILINE)
    addresses = sorted(
        {a.rstrip(":,") for a in re.findall(rf"http://127\.0\.0\.1:{port}/[^\s'\")]*", printed)}
    )
    assert {f"http://127.0.0.1:{port}{p}" for p in ("/store/", "/repo/", "/demo/receiver")} <= set(
        addresses
    ), printed
    args = ["--env-file", str(tmp_path / "pkgcat-demo.env")]
    with serving(env, tmp_path / "server.log", port=port, args=args):
        for address in addresses:
            auth = {"Authorization": f"Bearer {key}"} if "/1.0/" in address else {}
            answer = httpx.get(address, headers=auth)
            assert answer.status_code == 200, f"{address}: {answer.status_code} {answer.text}"
