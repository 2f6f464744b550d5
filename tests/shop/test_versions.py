"""A package's versions on SQLite and PostgreSQL: roll back, withdraw, release, changelogs;
the indexes list what is served, and a withdrawn version stays for its buyers."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from sqlalchemy import Engine

from pkgcat.shop import releases
from pkgcat.shop.errors import ShopRefused
from pkgcat.storage.shop.log import history
from pkgcat.versions import Preference
from tests.backends import rows
from tests.conftest import Api
from tests.debs import build_deb
from tests.repository.conftest import Publisher
from tests.repository.test_served import stanzas, wait_for
from tests.shop.conftest import ALPHA, NOW, Mailbox
from tests.store.conftest import STORE
from tests.store.sileo import Sileo

SELLER = "seller:alpha-a"
PREFER = Preference(("iphoneos-arm64", "iphoneos-arm", "all"))
PAID = "com.alpha.paid"


def _listed(api: Api, package: str = PAID) -> list[str]:
    found = stanzas(api.http.get("/repo/Packages").content)
    return sorted(s["Version"] for s in found if s["Package"] == package)


@pytest.fixture
def three(pkgcat: Publisher, tmp_path: Path, engine: Engine) -> Engine:
    """com.alpha.paid 2.0 (published by the store's fixture), then 2.1 and 2.2."""
    for version in ("2.1", "2.2"):
        path = build_deb(tmp_path / version, PAID, version, "iphoneos-arm64")
        assert pkgcat("publish", str(path), "--source", "Alpha").exit_code == 0
    return engine


def test_roll_back_withdraw_and_release_move_what_is_listed_and_served(
    shop: Api, three: Engine, database_url: str
) -> None:
    engine = three
    assert _listed(shop) == ["2.0", "2.1", "2.2"]
    done = releases.roll_back(engine, ALPHA, PAID, "2.1", preference=PREFER, actor=SELLER, now=NOW)
    assert done.served == "2.1"
    assert [(v.version, v.listed) for v in done.versions] == [
        ("2.2", False), ("2.1", True), ("2.0", True),
    ]  # fmt: skip
    wait_for(lambda: _listed(shop) == ["2.0", "2.1"], "the rollback")
    native = orjson.loads(shop.http.get(f"/repo/depictions/{PAID}.json").content)
    versions = [v["text"] for v in native["tabs"][0]["views"] if v.get("title") == "Version"]
    assert versions == ["2.1"]

    releases.set_changelog(
        engine, ALPHA, PAID, "2.0", "Fixed **the crash**.", actor=SELLER, now=NOW
    )
    after = releases.withdraw(engine, ALPHA, PAID, "2.1", preference=PREFER, actor=SELLER, now=NOW)
    assert after.served == "2.0"
    wait_for(lambda: _listed(shop) == ["2.0"], "the withdrawal")
    native = orjson.loads(shop.http.get(f"/repo/depictions/{PAID}.json").content)
    changelog = [tab for tab in native["tabs"] if tab["tabname"] == "Changelog"]
    assert changelog[0]["views"][0] == {"class": "DepictionSubheaderView", "title": "Version 2.0"}
    assert "**the crash**" in changelog[0]["views"][1]["markdown"]
    assert "<strong>the crash</strong>" in shop.http.get(f"/repo/depictions/{PAID}.html").text

    back = releases.release(engine, ALPHA, PAID, "2.2", preference=PREFER, actor=SELLER, now=NOW)
    assert back.served == "2.2"
    wait_for(lambda: _listed(shop) == ["2.0", "2.2"], "the release")  # 2.1 stays withdrawn
    assert [e.change for e in history(engine, ALPHA, PAID)] == [
        "package.version_released", "package.version_withdrawn", "package.changelog_changed",
        "package.version_released",
    ]  # fmt: skip
    assert rows(database_url, "SELECT version FROM packages WHERE package = 'com.alpha.paid'") == [
        ("2.2",)
    ]


@pytest.mark.parametrize(
    ("action", "version", "field", "says"),
    [
        ("roll_back", "9.9", "version", "no published version '9.9'"),
        ("roll_back", "2.2", "version", "not older"),
        ("release", "3.0", "version", "no published version"),
        ("withdraw", "1.0", "version", "no published version"),
    ],
)
def test_a_version_that_does_not_exist_is_refused_and_nothing_is_written(
    three: Engine, database_url: str, action: str, version: str, field: str, says: str
) -> None:
    with pytest.raises(ShopRefused) as refused:
        getattr(releases, action)(
            three, ALPHA, PAID, version, preference=PREFER, actor=SELLER, now=NOW
        )
    assert refused.value.field == field
    assert says in refused.value.message
    assert rows(database_url, "SELECT count(*) FROM package_history") == [(0,)]
    assert rows(database_url, "SELECT count(*) FROM package_pages") == [(0,)]


def test_the_last_version_served_is_not_withdrawn(engine: Engine) -> None:
    with pytest.raises(ShopRefused, match="only version served"):
        releases.withdraw(engine, ALPHA, PAID, "2.0", preference=PREFER, actor=SELLER, now=NOW)


def test_a_withdrawn_version_is_kept_for_its_buyers_only(
    shop: Api, three: Engine, mailbox: tuple[Mailbox, int]
) -> None:
    """Decided: a withdrawn version leaves the indexes, and the store still makes a download
    URL of it for a device that owns the package (a reinstall of what it has); nobody else
    gets the file, and its plain address is refused as a paid file's is."""
    buyer = Sileo(shop.http, "/store/")
    assert buyer.sign_in(mailbox[0], "owner@example.test").status_code == 303
    assert buyer.purchase(PAID).json() == {"status": 0}
    [stanza] = [s for s in stanzas(shop.http.get("/repo/Packages").content)
                if s["Package"] == PAID and s["Version"] == "2.1"]  # fmt: skip
    releases.withdraw(three, ALPHA, PAID, "2.1", preference=PREFER, actor=SELLER, now=NOW)
    wait_for(lambda: _listed(shop) == ["2.0", "2.2"], "the withdrawal")
    assert shop.http.get(f"/repo/{stanza['Filename']}").status_code == 402
    url = buyer.authorize_download(PAID, "2.1", STORE)
    assert url.status_code == 200, url.text
    got = shop.http.get(url.json()["url"].removeprefix("http://testserver"))
    assert got.status_code == 200
    assert len(got.content) == int(stanza["Size"])
    stranger = Sileo(shop.http, "/store/", udid="stranger0001")
    assert stranger.sign_in(mailbox[0], "stranger@example.test").status_code == 303
    assert stranger.authorize_download(PAID, "2.1", STORE).status_code == 403
