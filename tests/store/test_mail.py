"""The sign-in mail over STARTTLS with a login, against a real SMTP server (aiosmtpd) that
refuses a login before TLS and checks the server's certificate as the system's would."""

from __future__ import annotations

import asyncio
import smtplib
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from pkgcat.config import Settings
from pkgcat.store.mail import Mailer
from tests.servers import free_port
from tests.store.conftest import Mailbox

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
