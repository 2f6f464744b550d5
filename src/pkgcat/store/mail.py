"""The sign-in mail: one one-time code, sent the way ``PKGCAT_MAIL_BACKEND`` says.

- ``smtp`` (:class:`Mailer`): the standard library's ``smtplib`` in a thread: STARTTLS when
  the settings ask for it (with the system's certificate authorities), a login when they give
  a user. The code is in the message only: never logged.
- ``console`` (:class:`ConsoleMailer`), for development: the whole message is written to the
  server's standard output and the code to its log, as Django's console e-mail backend does,
  so that a store can be tried with no mail server. Settings allow it only for a store in
  test mode (where nothing is bought for money) or on a loopback address
  (:class:`pkgcat.config.Settings`): whoever reads the server's output or log reads every
  code, so it is for a store only its developer signs in to.

:func:`mailer_for` picks one from the settings.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
import sys
from email.message import EmailMessage
from typing import Protocol, TextIO

import anyio

from pkgcat.config import Settings

TIMEOUT = 30
"""Seconds any one exchange with the SMTP server may take."""
log = logging.getLogger(__name__)


class SendsCodes(Protocol):
    async def send_code(self, to: str, code: str, minutes: int) -> None: ...

    async def send_gift(self, to: str, code: str, package: str, until: str) -> None: ...


def gift_message(
    settings: Settings, sender: str, to: str, code: str, package: str, until: str
) -> EmailMessage:
    """A gift's mail: the code, and where to redeem it (the store's sign-in page)."""
    mail = EmailMessage()
    mail["From"] = sender
    mail["To"] = to
    mail["Subject"] = f"A gift from {settings.store_name}: {package}"
    mail.set_content(
        f"You have been given {package} on {settings.store_name}.\n\n"
        f"Your gift code is {code}. In Sileo, open the package and tap Sign in: enter the "
        f"code on the sign-in page, with this email address. It works once, until {until}.\n"
    )
    return mail


def message(settings: Settings, sender: str, to: str, code: str, minutes: int) -> EmailMessage:
    """The sign-in mail, whichever way it goes."""
    mail = EmailMessage()
    mail["From"] = sender
    mail["To"] = to
    mail["Subject"] = f"{settings.store_name} sign-in code: {code}"
    mail.set_content(
        f"Your code to sign in to {settings.store_name} is {code}.\n\n"
        f"It works once, for {minutes} minutes. If you did not ask for it, ignore this mail.\n"
    )
    return mail


class Mailer:
    def __init__(self, settings: Settings) -> None:
        assert settings.smtp_host is not None
        assert settings.smtp_from is not None
        self._settings = settings
        self._host = settings.smtp_host
        self._port = settings.smtp_port
        self._sender = settings.smtp_from
        self._starttls = settings.smtp_starttls
        self._user = settings.smtp_username
        self._password = settings.smtp_password

    def _send(self, mail: EmailMessage) -> None:
        with smtplib.SMTP(self._host, self._port, timeout=TIMEOUT) as smtp:
            if self._starttls:
                smtp.starttls(context=ssl.create_default_context())
            if self._user is not None and self._password is not None:
                smtp.login(self._user, self._password.get_secret_value())
            smtp.send_message(mail)

    async def send_code(self, to: str, code: str, minutes: int) -> None:
        mail = message(self._settings, self._sender, to, code, minutes)
        await anyio.to_thread.run_sync(self._send, mail)

    async def send_gift(self, to: str, code: str, package: str, until: str) -> None:
        mail = gift_message(self._settings, self._sender, to, code, package, until)
        await anyio.to_thread.run_sync(self._send, mail)


class ConsoleMailer:
    """Development only: the mail to standard output, the code to the log (one line)."""

    def __init__(self, settings: Settings, out: TextIO | None = None) -> None:
        self._settings = settings
        self._sender = settings.smtp_from or "store@localhost"
        self._out = out

    async def send_code(self, to: str, code: str, minutes: int) -> None:
        mail = message(self._settings, self._sender, to, code, minutes)
        out = self._out or sys.stdout
        rule = "-" * 72
        out.write(f"{rule}\n{mail.as_string()}{rule}\n")
        out.flush()
        log.warning("console mail (development only): sign-in code %s for %s", code, to)

    async def send_gift(self, to: str, code: str, package: str, until: str) -> None:
        mail = gift_message(self._settings, self._sender, to, code, package, until)
        out = self._out or sys.stdout
        rule = "-" * 72
        out.write(f"{rule}\n{mail.as_string()}{rule}\n")
        out.flush()
        log.warning("console mail (development only): gift code %s for %s", code, to)


def mailer_for(settings: Settings) -> SendsCodes:
    """The mail backend the settings name."""
    if settings.mail_backend == "console":
        return ConsoleMailer(settings)
    return Mailer(settings)
