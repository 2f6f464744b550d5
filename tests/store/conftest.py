"""The store's fixtures: a real SMTP server (aiosmtpd) on 127.0.0.1, and the app with the store on."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from tests.conftest import Api, AppFactory
from tests.debs import build_deb
from tests.repository.conftest import (  # noqa: F401  # fixtures the store's tests share
    Publisher,
    blob_dir,
    cli_env,
    pkgcat,
)
from tests.servers import free_port

PASSPHRASE = "a test passphrase of some length"
STORE = "http://testserver/store/"
UDID = "0123456789abcdef0123456789abcdef01234567"
MODEL = "iPhone14,2"


class Mailbox:
    """What the SMTP server received, as parsed messages."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def handle_DATA(
        self, _server: SMTP, _session: Session, envelope: Envelope
    ) -> str:  # aiosmtpd's hook name
        assert isinstance(envelope.content, bytes)
        self.messages.append(message_from_bytes(envelope.content))
        return "250 OK"

    def code_for(self, email: str, timeout: float = 10.0) -> str:
        """The code of the latest mail to ``email``, waiting for it to arrive."""
        deadline = time.monotonic() + timeout
        while True:
            for message in reversed(self.messages):
                if message["To"] == email:
                    found = re.search(r"\b(\d{6})\b", str(message["Subject"]))
                    assert found is not None
                    return found[1]
            assert time.monotonic() < deadline, f"no mail to {email} within {timeout} s"
            time.sleep(0.01)  # polling for a delivery, not timing anything


@pytest.fixture
def mailbox() -> Iterator[tuple[Mailbox, int]]:
    box = Mailbox()
    port = free_port()
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield box, port
    finally:
        controller.stop()


@pytest.fixture
def sold(
    pkgcat: Publisher,  # noqa: F811  # the shared fixture
    tmp_path: Path,
    signing_key: Callable[[str], None],
    cli_env: dict[str, str],  # noqa: F811  # the shared fixture
) -> dict[str, Path]:
    """A signing key, and a paid and a free package published."""
    signing_key(cli_env["PKGCAT_DATABASE_URL"])
    files = {
        "paid": build_deb(tmp_path, "com.alpha.paid", "2.0", "iphoneos-arm64"),
        "other": build_deb(tmp_path, "com.alpha.other", "1.0", "iphoneos-arm64"),
        "free": build_deb(tmp_path, "com.alpha.free", "1.0", "iphoneos-arm64"),
    }
    for path in files.values():
        assert pkgcat("publish", str(path), "--source", "Alpha").exit_code == 0
    return files


def store_settings(port: int, **over: Any) -> dict[str, Any]:
    return {
        "repository_passphrase": PASSPHRASE,
        "store_url": STORE,
        "store_allow_http": True,
        "store_platform": "test",
        "smtp_host": "127.0.0.1",
        "smtp_port": port,
        "smtp_from": "store@example.test",
        "smtp_starttls": False,
    } | over


@pytest.fixture
def shop(
    make_api: AppFactory,
    sold: dict[str, Path],
    cli_env: dict[str, str],  # noqa: F811  # the shared fixture
    mailbox: tuple[Mailbox, int],
) -> Api:
    return make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], **store_settings(mailbox[1]))
