"""Gift codes and gifts on SQLite and PostgreSQL: a gift is a purchase of platform ``gift``,
total 0, owned through purchases; a code is redeemed once, whatever races it."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import Engine

from pkgcat.shop import gifting
from pkgcat.shop.errors import ShopRefused
from pkgcat.storage import store
from pkgcat.storage.engine import engine_for
from pkgcat.storage.shop import gifts
from pkgcat.storage.shop.log import history
from tests.backends import rows
from tests.conftest import Api
from tests.shop.conftest import ALPHA, NOW, Mailbox
from tests.store.sileo import Sileo, hidden_fields

SELLER = "seller:alpha-a"


def _buyer(engine: Engine, email: str) -> int:
    store.save_code(engine, email, "c" * 64, NOW + 600)
    buyer = store.sign_in(engine, email, "c" * 64, email[:8] * 8, "s" * 64, "udid1", "iPhone", NOW)
    assert buyer is not None
    return buyer


def test_codes_are_made_listed_with_their_state_and_shown_only_once(engine: Engine) -> None:
    made = gifting.create_codes(
        engine, ALPHA, "com.alpha.paid", 3, expires_at=NOW + 86_400, default_days=30,
        actor=SELLER, now=NOW,
    )  # fmt: skip
    assert len(set(made.codes)) == 3
    assert all(len(code) == 23 and code.count("-") == 3 for code in made.codes)
    listed = gifts.list_codes(engine, ALPHA, "com.alpha.paid", NOW)
    assert [gift.state for gift in listed] == ["open"] * 3
    assert {gift.hint for gift in listed} == {code.replace("-", "")[-4:] for code in made.codes}
    stored = rows(
        engine.url.render_as_string(hide_password=False), "SELECT code_hash FROM gift_codes"
    )
    assert not any(code.replace("-", "") in str(row) for row in stored for code in made.codes)

    buyer = _buyer(engine, "given@example.test")
    code = made.codes[0].lower().replace("-", " ")  # as a person may type it
    from pkgcat.store.service import code_text, digest

    done = gifts.redeem(engine, digest(code_text(code)), buyer, "given@example.test", None, NOW + 5)
    assert done.package == "com.alpha.paid"
    states = {
        gift.hint: gift.state for gift in gifts.list_codes(engine, ALPHA, "com.alpha.paid", NOW + 5)
    }
    assert sorted(states.values()) == ["open", "open", "redeemed"]
    assert [g.state for g in gifts.list_codes(engine, ALPHA, "com.alpha.paid", NOW + 86_401)].count(
        "expired"
    ) == 2
    assert store.owned_packages(engine, buyer, "udid1") == ["com.alpha.paid"]
    url = engine.url.render_as_string(hide_password=False)
    sale = rows(
        url,
        "SELECT total, commission, currency, payment_platform, status, nickname, txn_id"
        " FROM purchases WHERE payment_platform = 'gift'",
    )
    assert sale == [("0.00", "0.00", "USD", "gift", "Completed", "given@example.test", done.txn_id)]
    # Nothing for the seller's ledger: no money passed.
    assert rows(url, "SELECT count(*) FROM ledger_entries WHERE txn_id LIKE 'gift_%'") == [(0,)]
    with pytest.raises(ShopRefused, match="redeemed already"):
        gifts.redeem(engine, digest(code_text(code)), _buyer(engine, "late@example.test"),
                     "late@example.test", None, NOW + 6)  # fmt: skip
    assert [entry.change for entry in history(engine, ALPHA, "com.alpha.paid")] == [
        "gift.codes_created"
    ]


def test_a_code_redeemed_twice_at_once_by_two_hosts_is_owned_once(
    engine: Engine, database_url: str
) -> None:
    """Two engines (two hosts' pools) on one database, a barrier, the same code: one wins."""
    made = gifting.create_codes(
        engine, ALPHA, "com.alpha.paid", 1, expires_at=NOW + 86_400, default_days=30,
        actor=SELLER, now=NOW,
    )  # fmt: skip
    from pkgcat.store.service import code_text, digest

    code_hash = digest(code_text(made.codes[0]))
    buyers = [_buyer(engine, f"racer{n}@example.test") for n in range(2)]
    hosts = [engine_for(database_url) for _ in buyers]
    start = threading.Barrier(len(buyers))
    outcomes: list[object] = [None] * len(buyers)

    def redeem(n: int) -> None:
        start.wait(timeout=10)
        try:
            outcomes[n] = gifts.redeem(hosts[n], code_hash, buyers[n], f"racer{n}@example.test",
                                       None, NOW + 5)  # fmt: skip
        except ShopRefused as refused:
            outcomes[n] = refused

    threads = [threading.Thread(target=redeem, args=(n,)) for n in range(len(buyers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    for host in hosts:
        host.dispose()
    won = [o for o in outcomes if isinstance(o, gifts.Redeemed)]
    lost = [o for o in outcomes if isinstance(o, ShopRefused)]
    assert len(won) == 1, outcomes
    assert len(lost) == 1, outcomes
    assert lost[0].field == "gift_code"
    assert rows(database_url, "SELECT count(*) FROM purchases WHERE payment_platform = 'gift'") == [
        (1,)
    ]
    owners = [b for b in buyers if store.owned_packages(engine, b, "udid1") == ["com.alpha.paid"]]
    assert len(owners) == 1


async def _give(engine: Engine, mailer: object, *rows_: tuple[str, str]) -> list[object]:
    return list(
        await gifting.give_many(
            engine, mailer, ALPHA, list(rows_), expires_at=None, default_days=30,
            actor=SELLER, now=NOW,
        )
    )  # fmt: skip


class Outbox:
    """What would have been mailed (the mailer's own tests send through a real server)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str]] = []

    async def send_gift(self, to: str, code: str, package: str, until: str) -> None:
        assert until  # the day the code lasts to, as the mail says it
        self.sent.append((to, code, package))


@pytest.mark.anyio
async def test_a_copy_given_to_a_known_buyer_is_owned_at_once_else_a_code_is_mailed(
    engine: Engine,
) -> None:
    known = _buyer(engine, "known@example.test")
    mailed = Outbox()
    given = await _give(
        engine,
        mailed,
        ("com.alpha.paid", "Known@Example.test"),
        ("com.alpha.paid", "new@example.test"),
    )
    assert [g.delivered for g in given] == ["owned", "mailed"]  # type: ignore[attr-defined]
    assert store.owned_packages(engine, known, "udid1") == ["com.alpha.paid"]
    assert [(to, package) for to, _, package in mailed.sent] == [
        ("new@example.test", "com.alpha.paid")
    ]
    again = await _give(engine, mailed, ("com.alpha.paid", "known@example.test"))
    assert [g.delivered for g in again] == ["owned_already"]  # type: ignore[attr-defined]
    listed = gifts.list_codes(engine, ALPHA, "com.alpha.paid", NOW)
    assert sorted((g.recipient, g.state) for g in listed) == [
        ("known@example.test", "redeemed"), ("new@example.test", "open"),
    ]  # fmt: skip


@pytest.mark.anyio
async def test_a_customer_import_is_read_strictly_and_writes_nothing_when_a_row_is_wrong(
    engine: Engine, database_url: str
) -> None:
    mailed = Outbox()
    for text, refusal in [
        ("email,package\na@example.test,com.alpha.paid\nnot-an-address,com.alpha.paid\n",
         "row 3: email"),
        ("email,package\na@example.test,com.alpha.paid\nb@example.test,com.beta.paid\n",
         "row 2: package"),
        ("email,package,price\na@example.test,com.alpha.paid,1\n", "row 1"),
        ("email,package\na@example.test,com.alpha.paid,extra\n", "row 2"),
        ('email,package\n"a@example.test,com.alpha.paid\n', "row 2"),
    ]:  # fmt: skip
        with pytest.raises(ShopRefused) as refused:
            await gifting.import_customers(
                engine, mailed, ALPHA, text, expires_at=None, default_days=30, actor=SELLER,
                now=NOW,
            )  # fmt: skip
        assert refused.value.field.startswith(refusal), (text, str(refused.value))
    # The second file's first row was fine: nothing of it was written all the same.
    assert rows(database_url, "SELECT count(*) FROM gift_codes") == [(0,)]
    assert mailed.sent == []
    done = await gifting.import_customers(
        engine, mailed, ALPHA,
        "package,email\ncom.alpha.paid,one@example.test\ncom.alpha.other,one@example.test\n",
        expires_at=None, default_days=30, actor=SELLER, now=NOW,
    )  # fmt: skip
    assert [(g.package, g.delivered) for g in done] == [
        ("com.alpha.paid", "mailed"), ("com.alpha.other", "mailed"),
    ]  # fmt: skip


def test_a_mailed_code_is_redeemed_on_the_sign_in_page(
    shop: Api, mailbox: tuple[Mailbox, int], database_url: str, engine: Engine
) -> None:
    made = gifting.create_codes(
        engine, ALPHA, "com.alpha.other", 1, expires_at=None, default_days=30,
        actor=SELLER, now=NOW,
    )  # fmt: skip
    device = Sileo(shop.http, "/store/")
    page = shop.http.get("/store/authenticate", params={"udid": device.udid, "model": device.model})
    assert 'name="gift_code"' in page.text
    assert 'name="discount_code"' in page.text
    sent = shop.http.post(
        "/store/authenticate/email",
        data=hidden_fields(page.text) | {"email": "page@example.test", "gift_code": made.codes[0]},
    )
    assert sent.status_code == 200, sent.text
    fields = hidden_fields(sent.text)
    assert fields["gift_code"] == made.codes[0]
    done = shop.http.post(
        "/store/authenticate/code",
        data=fields | {"code": mailbox[0].code_for("page@example.test")},
        follow_redirects=False,
    )
    assert done.status_code == 303, done.text
    assert done.headers["location"].startswith("sileo://authentication_success?")
    sale = rows(
        database_url,
        "SELECT p.total, p.payment_platform, p.udid FROM purchases p"
        " WHERE p.nickname = 'page@example.test'",
    )
    assert sale == [("0.00", "gift", device.udid)]
    # The same code on another sign-in: refused on the page, signed in all the same.
    page = shop.http.get("/store/authenticate", params={"udid": "other1", "model": device.model})
    sent = shop.http.post(
        "/store/authenticate/email",
        data=hidden_fields(page.text) | {"email": "late@example.test", "gift_code": made.codes[0]},
    )
    late = shop.http.post(
        "/store/authenticate/code",
        data=hidden_fields(sent.text) | {"code": mailbox[0].code_for("late@example.test")},
        follow_redirects=False,
    )
    assert late.status_code == 200
    assert "redeemed already" in late.text
    assert "sileo://authentication_success?" in late.text


@pytest.mark.anyio
async def test_a_source_deleted_with_cascade_takes_its_shop_with_it(
    engine: Engine, database_url: str
) -> None:
    from typer.testing import CliRunner

    from pkgcat.cli import app as cli
    from pkgcat.shop import pages, selling

    pages.edit_page(engine, ALPHA, "com.alpha.paid", {"name": "Paid"}, actor=SELLER, now=NOW)
    selling.create_discount(engine, ALPHA, "com.alpha.paid", code="GONE", percent="10",
                            max_uses=1, ends_at=NOW + 60, actor=SELLER, now=NOW)  # fmt: skip
    await _give(engine, Outbox(), ("com.alpha.paid", "x@example.test"))
    env = {"PKGCAT_DATABASE_URL": database_url}
    done = CliRunner().invoke(cli, ["source", "delete", "Alpha", "--cascade"], env=env)
    assert done.exit_code == 0, done.output
    for table in ("package_pages", "package_history", "gift_codes", "discount_codes"):
        assert rows(database_url, f"SELECT count(*) FROM {table}") == [(0,)], table  # noqa: S608 - a table name of the test's own
