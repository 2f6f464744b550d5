"""Use cases of gifts: codes for a package, a copy given to an address, a customer import.

A code is 20 characters of Crockford's base32 (100 bits; shown as ``XXXXX-XXXXX-XXXXX-XXXXX``)
and stored only as its SHA-256, as sign-in codes and tokens are: the seller sees it once,
when it is made (or its recipient, in the mail). A gift is a purchase (``payment_platform``
``gift``, total 0): the buyer owns the package through purchases, like any other.

Mail goes after the commit: a gift that could not be mailed is still listed (its state
``open``, its recipient named), and is reported in the answer as not mailed.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import secrets
import smtplib
from dataclasses import replace
from datetime import UTC, datetime

from sqlalchemy import Engine

from pkgcat.shop.errors import ShopRefused
from pkgcat.shop.values import Gift, GiftCode, NewGiftCodes
from pkgcat.storage.shop import gifts as stored

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base32: no I, L, O, U
CODES_MAX = 1000
"""The most codes made at once."""
IMPORT_ROWS_MAX = 10_000
EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s]{1,189}\.[^@\s.]{2,63}")


def new_code() -> tuple[str, stored.NewCode]:
    """A code as shown, and as stored."""
    raw = "".join(secrets.choice(ALPHABET) for _ in range(20))
    shown = "-".join(raw[i : i + 5] for i in range(0, 20, 5))
    return shown, stored.NewCode(
        f"gft_{secrets.token_hex(12)}", hashlib.sha256(raw.encode()).hexdigest(), raw[-4:]
    )


def _expiry(expires_at: int | None, now: int, days: int) -> int:
    when = now + days * 86_400 if expires_at is None else expires_at
    if when <= now:
        raise ShopRefused("expires_at", "is in the past")
    return when


def create_codes(
    engine: Engine, source_id: int, package: str, count: int, *, expires_at: int | None,
    default_days: int, actor: str, now: int,
) -> NewGiftCodes:  # fmt: skip
    """``count`` single-use codes for the package; the codes are in the answer only."""
    if not 1 <= count <= CODES_MAX:
        raise ShopRefused("count", f"must be 1 to {CODES_MAX}")
    made = [new_code() for _ in range(count)]
    listed = stored.create_codes(
        engine, source_id, package, [code for _, code in made],
        expires_at=_expiry(expires_at, now, default_days), actor=actor, now=now,
    )  # fmt: skip
    by_id = {gift.id: gift for gift in listed}
    return NewGiftCodes(
        package, tuple(shown for shown, _ in made), tuple(by_id[code.id] for _, code in made)
    )


def codes(engine: Engine, source_id: int, package: str, now: int) -> list[GiftCode]:
    return stored.list_codes(engine, source_id, package, now)


def check_email(field: str, email: str) -> str:
    email = email.strip().lower()
    if not EMAIL.fullmatch(email) or len(email) > 254:
        raise ShopRefused(field, f"{email[:80]!r} is not an email address")
    return email


async def _deliver(mailer: object, given: list[stored.Given], shown: dict[str, str],
                   until: int) -> list[Gift]:  # fmt: skip
    day = datetime.fromtimestamp(until, UTC).strftime("%Y-%m-%d")
    out = []
    for one in given:
        gift = Gift(one.package, one.email, one.delivered, one.gift_id, one.txn_id)
        if one.delivered == "mailed" and one.gift_id is not None:
            try:
                await mailer.send_gift(one.email, shown[one.gift_id], one.package, day)  # type: ignore[attr-defined]  # the mailer's protocol
            except (smtplib.SMTPException, OSError):
                gift = replace(gift, delivered="not_mailed")
        out.append(gift)
    return out


async def give(
    engine: Engine, mailer: object, source_id: int, package: str, email: str, *,
    expires_at: int | None, default_days: int, actor: str, now: int,
) -> Gift:  # fmt: skip
    """Give a copy to ``email``: owned at once when the store has that buyer, else a code
    mailed to the address."""
    return (
        await give_many(
            engine, mailer, source_id, [(package, email)], expires_at=expires_at,
            default_days=default_days, actor=actor, now=now,
        )
    )[0]  # fmt: skip


async def give_many(
    engine: Engine, mailer: object, source_id: int, rows: list[tuple[str, str]], *,
    expires_at: int | None, default_days: int, actor: str, now: int,
) -> list[Gift]:  # fmt: skip
    single = len(rows) == 1
    checked = [
        (package, check_email("email" if single else f"row {n}: email", email))
        for n, (package, email) in enumerate(rows, start=1)
    ]
    until = _expiry(expires_at, now, default_days)
    made = [new_code() for _ in checked]
    given = stored.give(
        engine, source_id,
        [(package, email, code) for (package, email), (_, code) in zip(checked, made, strict=True)],
        expires_at=until, actor=actor, now=now,
    )  # fmt: skip
    shown = {code.id: text for text, code in made}
    return await _deliver(mailer, given, shown, until)


def read_customers(text: str) -> list[tuple[str, str]]:
    """A customer import: CSV with the header ``email,package`` (any order, no other column),
    one gift a row. Read strictly: every error names its row and field, and none is written
    when any row is wrong."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")), strict=True)
    try:
        header = [name.strip().lower() for name in next(reader)]
    except StopIteration:
        raise ShopRefused("file", "is empty: the first line is the header email,package") from None
    except csv.Error as error:
        raise ShopRefused("row 1", str(error)) from None
    if sorted(header) != ["email", "package"]:
        raise ShopRefused(
            "row 1", f"the header must be email,package, not {','.join(header)[:80]!r}"
        )
    at = {name: header.index(name) for name in header}
    rows: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    number = 1
    try:
        for fields in reader:
            number += 1
            if not fields or all(not f.strip() for f in fields):
                continue
            if len(fields) != 2:
                raise ShopRefused(f"row {number}", f"has {len(fields)} fields, not 2")
            email = check_email(f"row {number}: email", fields[at["email"]])
            package = fields[at["package"]].strip()
            if not package:
                raise ShopRefused(f"row {number}: package", "is empty")
            if (package, email) in seen:
                raise ShopRefused(f"row {number}", f"repeats {email} for {package}")
            seen.add((package, email))
            rows.append((package, email))
            if len(rows) > IMPORT_ROWS_MAX:
                raise ShopRefused("file", f"has more than {IMPORT_ROWS_MAX} rows")
    except csv.Error as error:
        raise ShopRefused(f"row {number + 1}", str(error)) from None
    if not rows:
        raise ShopRefused("file", "has no rows under its header")
    return rows


async def import_customers(
    engine: Engine, mailer: object, source_id: int, text: str, *, expires_at: int | None,
    default_days: int, actor: str, now: int,
) -> list[Gift]:  # fmt: skip
    """Gift each row of a customer import, all in one transaction (none when a row is wrong)."""
    rows = read_customers(text)
    try:
        return await give_many(
            engine, mailer, source_id, rows, expires_at=expires_at, default_days=default_days,
            actor=actor, now=now,
        )  # fmt: skip
    except ShopRefused as refused:
        if refused.field == "email":  # give_many names rows only when there are several
            raise ShopRefused("row 2: email", refused.message) from None
        raise
