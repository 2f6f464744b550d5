"""What Sileo and Zebra v1 really send and parse, against the store and its index (SQLite, PostgreSQL).

Each test is written from the client's source and cites it: Sileo/Sileo (c9f7015) and
zbrateam/Zebra (branch v1, c615ab4).
"""

from __future__ import annotations

from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from pkgcat.storage.engine import engine_for
from tests.conftest import Api
from tests.debs import build_deb
from tests.repository.conftest import Publisher
from tests.repository.test_served import stanzas, wait_for
from tests.store.sileo import sileo_paid
from tests.store.zebra import zebra_paid


def raw_tags(packages: bytes) -> dict[tuple[str, str], str]:
    """Each stanza's ``Tag`` line as the clients read it, by (package, architecture).

    Sileo's parser stops at a folded line of any field but ``Description``
    (ControlFileParserFast.c, ``parseControlFile``): the tag must fit its line.
    """
    found: dict[tuple[str, str], str] = {}
    for block in packages.decode().split("\n\n"):
        lines = block.strip("\n").split("\n")
        fields = {line.partition(":")[0]: line.partition(":")[2].strip() for line in lines}
        for i, line in enumerate(lines):
            if line.startswith("Tag:"):
                assert i + 1 == len(lines) or lines[i + 1][:1] not in (" ", "\t"), block
        found[fields["Package"], fields["Architecture"]] = fields.get("Tag", "")
    return found


def _rewind(database_url: str, seconds: int) -> None:
    """Move what the served Last-Modified is made of back in time, so that a later
    change shows a later one within the same second the test runs in."""
    engine = engine_for(database_url)
    try:
        with engine.begin() as db:
            db.execute(text("UPDATE deb_files SET stored_at = stored_at - :s"), {"s": seconds})
            db.execute(text("UPDATE packages SET updated_at = updated_at - :s"), {"s": seconds})
            db.execute(
                text("UPDATE repository_keys SET created_at = created_at - :s"), {"s": seconds}
            )
    finally:
        engine.dispose()


@pytest.fixture
def sold(pkgcat: Publisher, tmp_path: Path, database_url: str) -> dict[str, Path]:
    """What the store's ``shop`` serves here: a signing key; com.alpha.paid (1.99) for two
    architectures, com.alpha.other (4.99) with tags spelt with bare commas, com.alpha.free
    (0.00) tagged commercial by its own control file."""
    assert pkgcat("repo", "key", "create").exit_code == 0
    files = {
        "paid-arm": build_deb(tmp_path, "com.alpha.paid", "2.0", "iphoneos-arm"),
        "paid-arm64": build_deb(tmp_path, "com.alpha.paid", "2.0", "iphoneos-arm64"),
        "other": build_deb(
            tmp_path, "com.alpha.other", "1.0", "iphoneos-arm64", Tag="role::enduser,purpose::x"
        ),
        "free": build_deb(
            tmp_path,
            "com.alpha.free",
            "1.0",
            "iphoneos-arm64",
            Tag="cydia::commercial, role::enduser",
        ),
    }
    for path in files.values():
        result = pkgcat("publish", str(path), "--source", "Alpha")
        assert result.exit_code == 0, result.output
    _rewind(database_url, 3600)
    return files


def test_every_paid_stanza_is_tagged_as_both_clients_read_it_and_a_price_moves_the_tag(
    shop: Api, pkgcat: Publisher, tmp_path: Path
) -> None:
    """Row 1: a package priced above zero is paid to Sileo and Zebra; one priced zero is free
    to both, whatever its own control file says; an import of prices moves the tag, and a
    client asking with If-Modified-Since (Zebra's ZBDownloadManager.m,
    ``downloadPackagesFileWithExtension:``) is sent the new index."""
    first = shop.http.get("/repo/Packages")
    tags = raw_tags(first.content)
    paid = {("com.alpha.paid", "iphoneos-arm"), ("com.alpha.paid", "iphoneos-arm64")}
    paid.add(("com.alpha.other", "iphoneos-arm64"))
    for key, tag in tags.items():
        assert sileo_paid(tag) is (key in paid), (key, tag)
        assert zebra_paid(tag) is (key in paid), (key, tag)
    # The package's own tags are kept, in their order, after ours.
    assert tags["com.alpha.other", "iphoneos-arm64"] == (
        "cydia::commercial, role::enduser, purpose::x"
    )
    assert tags["com.alpha.free", "iphoneos-arm64"] == "role::enduser"
    # What the repository does agrees: the free file downloads, the paid one needs a URL.
    files = {(s["Package"], s["Architecture"]): s["Filename"] for s in stanzas(first.content)}
    assert shop.http.get(f"/repo/{files['com.alpha.free', 'iphoneos-arm64']}").status_code == 200
    assert shop.http.get(f"/repo/{files['com.alpha.paid', 'iphoneos-arm64']}").status_code == 402

    prices = tmp_path / "prices.csv"
    prices.write_text("package,price,currency\ncom.alpha.paid,0,USD\ncom.alpha.free,2.00,USD\n")
    assert pkgcat("import-prices", str(prices)).exit_code == 0

    def moved() -> bool:
        now = raw_tags(shop.http.get("/repo/Packages").content)
        return sileo_paid(now["com.alpha.free", "iphoneos-arm64"])

    wait_for(moved, "the price's tag in Packages")
    after = raw_tags(shop.http.get("/repo/Packages").content)
    assert not sileo_paid(after["com.alpha.paid", "iphoneos-arm64"])
    assert not zebra_paid(after["com.alpha.paid", "iphoneos-arm"])
    assert zebra_paid(after["com.alpha.free", "iphoneos-arm64"])
    assert after["com.alpha.free", "iphoneos-arm64"] == "cydia::commercial, role::enduser"
    since = first.headers["last-modified"]
    again = shop.http.get("/repo/Packages.xz", headers={"If-Modified-Since": since})
    assert again.status_code == 200
    assert parsedate_to_datetime(again.headers["last-modified"]) > parsedate_to_datetime(since)
