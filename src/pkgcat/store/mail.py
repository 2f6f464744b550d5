"""The sign-in mail: one one-time code, sent through the SMTP server the settings name.

The standard library's ``smtplib`` in a thread: STARTTLS when the settings ask for
it (with the system's certificate authorities), a login when they give a user.
The code is in the message only: never logged.
"""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage

import anyio

from pkgcat.config import Settings

TIMEOUT = 30
"""Seconds any one exchange with the SMTP server may take."""


class Mailer:
    def __init__(self, settings: Settings) -> None:
        assert settings.smtp_host is not None
        assert settings.smtp_from is not None
        self._host = settings.smtp_host
        self._port = settings.smtp_port
        self._sender = settings.smtp_from
        self._starttls = settings.smtp_starttls
        self._user = settings.smtp_username
        self._password = settings.smtp_password
        self._store = settings.store_name

    def _message(self, to: str, code: str, minutes: int) -> EmailMessage:
        message = EmailMessage()
        message["From"] = self._sender
        message["To"] = to
        message["Subject"] = f"{self._store} sign-in code: {code}"
        message.set_content(
            f"Your code to sign in to {self._store} is {code}.\n\n"
            f"It works once, for {minutes} minutes. If you did not ask for it, ignore this mail.\n"
        )
        return message

    def _send(self, message: EmailMessage) -> None:
        with smtplib.SMTP(self._host, self._port, timeout=TIMEOUT) as smtp:
            if self._starttls:
                smtp.starttls(context=ssl.create_default_context())
            if self._user is not None and self._password is not None:
                smtp.login(self._user, self._password.get_secret_value())
            smtp.send_message(message)

    async def send_code(self, to: str, code: str, minutes: int) -> None:
        await anyio.to_thread.run_sync(self._send, self._message(to, code, minutes))
