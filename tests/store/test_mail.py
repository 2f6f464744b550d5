"""The sign-in mail over STARTTLS with a login, against a real SMTP server (aiosmtpd) that
refuses a login before TLS and checks the server's certificate as the system's would."""

from __future__ import annotations

import asyncio
import logging
import re
import smtplib
import ssl
from collections.abc import Iterator
from email import message_from_string
from pathlib import Path
from typing import Any

import pytest
import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from pydantic import ValidationError

from pkgcat.config import Settings
from pkgcat.store.mail import Mailer
from tests.conftest import AppFactory
from tests.servers import free_port
from tests.store.conftest import Mailbox, store_settings
from tests.store.sileo import Sileo

BASE = "/store/"
USER, PASSWORD = "store-mailer", "a password only the mail server knows"


class Authenticator:
    """aiosmtpd's authenticator hook: one user, one password; what was tried is kept."""

    def __init__(self) -> None:
        self.tried: list[tuple[bytes, bytes, bool]] = []

    def __call__(
        self, _server: Any, session: Any, _envelope: Any, _mechanism: str, data: Any
    ) -> AuthResult:
        assert isinstance(data, LoginPassword)
        tls = session.ssl is not None
        self.tried.append((data.login, data.password, tls))
        good = data.login == USER.encode() and data.password == PASSWORD.encode()
        return AuthResult(success=good)


@pytest.fixture
def authority() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls_mail_server(
    authority: trustme.CA, tmp_path: Path
) -> Iterator[tuple[Mailbox, Authenticator, int]]:
    """STARTTLS required before anything, a login required, with a certificate for 127.0.0.1."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(context)
    box, auth, port = Mailbox(), Authenticator(), free_port()
    controller = Controller(
        box,
        hostname="127.0.0.1",
        port=port,
        tls_context=context,
        require_starttls=True,
        auth_required=True,
        auth_require_tls=True,
        authenticator=auth,
    )
    controller.start()
    try:
        yield box, auth, port
    finally:
        controller.stop()


def mailer(port: int, **over: Any) -> Mailer:
    settings: dict[str, Any] = {
        "smtp_host": "127.0.0.1",
        "smtp_port": port,
        "smtp_from": "store@example.test",
        "smtp_starttls": True,
        "smtp_username": USER,
        "smtp_password": PASSWORD,
    }
    return Mailer(Settings(**(settings | over)))


def test_the_code_goes_over_starttls_with_the_login_sent_only_inside_tls(
    tls_mail_server: tuple[Mailbox, Authenticator, int],
    authority: trustme.CA,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    box, auth, port = tls_mail_server
    bundle = tmp_path / "authority.pem"
    authority.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))  # the system's authorities, for this test
    asyncio.run(mailer(port).send_code("buyer@example.test", "123456", 10))
    assert box.code_for("buyer@example.test") == "123456"
    assert auth.tried == [(USER.encode(), PASSWORD.encode(), True)]


def test_a_server_whose_certificate_no_authority_vouches_for_gets_nothing(
    tls_mail_server: tuple[Mailbox, Authenticator, int],
) -> None:
    box, auth, port = tls_mail_server
    with pytest.raises(ssl.SSLCertVerificationError):
        asyncio.run(mailer(port).send_code("buyer@example.test", "654321", 10))
    assert box.messages == []
    assert auth.tried == []  # the password never left


def test_without_starttls_a_server_that_requires_it_refuses_and_no_password_is_sent(
    tls_mail_server: tuple[Mailbox, Authenticator, int],
) -> None:
    box, auth, port = tls_mail_server
    with pytest.raises(smtplib.SMTPException):
        asyncio.run(mailer(port, smtp_starttls=False).send_code("buyer@example.test", "1", 10))
    assert box.messages == []
    assert auth.tried == []


class ConsoleBox(Mailbox):
    """The mails the console backend wrote to standard output, parsed as the SMTP server would."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        super().__init__()
        self._capsys = capsys

    def code_for(self, email: str, timeout: float = 10.0) -> str:
        written = self._capsys.readouterr().out
        for part in written.split("-" * 72 + "\n"):
            if part.strip():
                self.messages.append(message_from_string(part))
        return super().code_for(email, timeout)


def test_the_console_backend_signs_a_buyer_in_with_no_mail_server(
    make_api: AppFactory,
    sold: dict[str, Path],
    cli_env: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = store_settings(1, mail_backend="console", smtp_host=None, smtp_from=None)
    shop = make_api(blob_dir=cli_env["PKGCAT_BLOB_DIR"], **settings)
    device = Sileo(shop.http, BASE)
    with caplog.at_level(logging.WARNING, logger="pkgcat.store.mail"):
        assert device.sign_in(ConsoleBox(capsys), "dev@example.test").status_code == 303
    assert device.user_info().status_code == 200
    logged = [r.getMessage() for r in caplog.records if r.name == "pkgcat.store.mail"]
    assert len(logged) == 1
    assert "dev@example.test" in logged[0]
    assert re.search(r"sign-in code \d{6} ", logged[0])


@pytest.mark.parametrize(
    ("store_url", "platform", "allowed"),
    [
        ("http://127.0.0.1:8000/store/", "none", True),
        ("http://localhost:8000/store/", "none", True),
        ("http://[::1]:8000/store/", "none", True),
        ("https://shop.example.com/store/", "test", True),
        ("https://shop.example.com/store/", "none", False),
        ("http://10.0.0.5/store/", "none", False),
        ("http://127.0.0.1.example.com/store/", "none", False),
    ],
)
def test_the_console_backend_is_refused_outside_development(
    store_url: str, platform: str, allowed: bool
) -> None:
    settings: dict[str, Any] = {
        "store_url": store_url,
        "store_allow_http": True,
        "store_platform": platform,
        "mail_backend": "console",
    }
    if allowed:
        assert Settings(**settings).mail_backend == "console"
        return
    with pytest.raises(ValidationError, match=r"PKGCAT_MAIL_BACKEND=console .* development only"):
        Settings(**settings)


def test_without_a_mail_server_the_refusal_names_the_console_backend() -> None:
    with pytest.raises(ValidationError, match=r"PKGCAT_SMTP_HOST .* PKGCAT_MAIL_BACKEND=console"):
        Settings(store_url="https://shop.example.com/store/", store_platform="test")
