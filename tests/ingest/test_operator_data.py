"""Purchases, statistics and prices from CSV and JSON Lines: checked whole, written whole."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from pkgcat.ingest import OperatorDataError
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from pkgcat.storage.writes.operator import import_prices, import_purchases, import_stats
from tests import factories as f


@pytest.fixture
def shop(admin: CatalogueAdmin) -> CatalogueAdmin:
    """Two sources; Alpha has a paid and a free package, Beta one package."""
    admin.load(
        sources=[f.source(1, "Alpha"), f.source(2, "Beta")],
        packages=[
            f.package(1, 1, "com.alpha.paid"),
            f.package(2, 1, "com.alpha.free", price="0.00"),
            f.package(3, 2, "com.beta.tool"),
        ],
    )
    return admin


PURCHASE = {
    "package": "com.alpha.paid",
    "nickname": "ada",
    "status": "Completed",
    "total": "1.99",
    "commission": "0.30",
    "currency": "USD",
    "date": "2024-03-10T12:00:00+02:00",
    "txn_id": "TXN-1",
    "profile_url": "https://forum.example/u/ada",
    "payment_platform": "paypal",
}


def write_csv(path: Path, rows: list[dict[str, str]]) -> Path:
    columns = list(dict.fromkeys(name for row in rows for name in row))
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, columns, restval="")
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def purchases(admin: CatalogueAdmin) -> list[Any]:
    with admin.engine.connect() as db:
        return list(db.execute(select(t.purchases).order_by(t.purchases.c.txn_id)))


def test_purchases_from_csv_are_added_once(tmp_path: Path, shop: CatalogueAdmin) -> None:
    source_wide = PURCHASE | {"package": "", "source": "Alpha", "txn_id": "TXN-2", "total": "5"}
    file = write_csv(tmp_path / "sales.csv", [PURCHASE | {"source": ""}, source_wide])
    written = import_purchases(shop.engine, file)
    assert written.as_dict() == {"rows": 2, "added": 2, "updated": 0, "unchanged": 0}
    one, two = purchases(shop)
    assert (one.package_id, one.source_id, one.allowed_for) == (1, 1, "package")
    assert (two.package_id, two.source_id, two.allowed_for) == (None, 1, "source")
    assert one.purchased_at == 1710064800  # 10:00 UTC
    assert (one.total, one.commission, one.currency, one.payment_platform) == (
        "1.99", "0.30", "USD", "paypal",
    )  # fmt: skip
    again = import_purchases(shop.engine, file)
    assert again.as_dict() == {"rows": 2, "added": 0, "updated": 0, "unchanged": 2}
    assert len(purchases(shop)) == 2


def test_a_purchase_whose_status_changed_is_updated(tmp_path: Path, shop: CatalogueAdmin) -> None:
    import_purchases(shop.engine, write_jsonl(tmp_path / "a.jsonl", [PURCHASE]))
    refunded = write_jsonl(tmp_path / "b.jsonl", [PURCHASE | {"status": "Refunded"}])
    assert import_purchases(shop.engine, refunded).updated == 1
    (row,) = purchases(shop)
    assert row.status == "Refunded"


def test_purchases_from_json_lines_accept_numbers(tmp_path: Path, shop: CatalogueAdmin) -> None:
    row = PURCHASE | {"total": 2.5, "commission": 0}
    file = write_jsonl(tmp_path / "sales.jsonl", [row])
    assert import_purchases(shop.engine, file).added == 1
    assert (purchases(shop)[0].total, purchases(shop)[0].commission) == ("2.5", "0")


def test_a_bad_purchases_file_lists_every_problem_and_writes_nothing(
    tmp_path: Path, shop: CatalogueAdmin
) -> None:
    rows = [
        PURCHASE,
        PURCHASE | {"package": "com.nobody.nothing", "txn_id": "TXN-2"},
        PURCHASE | {"txn_id": "TXN-1", "currency": "usd"},
        PURCHASE | {"txn_id": "TXN-4", "date": "2024-03-10 12:00:00", "total": "1,99"},
        PURCHASE | {"txn_id": "TXN-5", "currency": "XYZ", "payment_platform": "PayPal"},
        PURCHASE | {"txn_id": "", "nickname": "", "profile_url": "forum/ada"},
        PURCHASE | {"txn_id": "TXN-7", "source": "Alpha"},
        PURCHASE | {"txn_id": "TXN-8", "package": "", "source": "Gamma", "allowed_for": "package"},
        PURCHASE | {"txn_id": "TXN-9", "date": "yesterday", "commission": "-1"},
    ]
    file = write_csv(tmp_path / "sales.csv", rows)
    with pytest.raises(OperatorDataError) as refused:
        import_purchases(shop.engine, file)
    assert str(refused.value) == f"{file}: 15 problems, nothing was imported"
    assert refused.value.problems == [
        "line 3: package: no package 'com.nobody.nothing' in the catalogue",
        "line 4: txn_id: 'TXN-1' is also on line 2",
        "line 4: currency: 'usd' is not an ISO 4217 currency code (write it in capitals: USD)",
        "line 5: total: '1,99' is not an amount like 1.99 (not negative); "
        "use a point as the decimal separator",
        "line 5: date: '2024-03-10 12:00:00' has no UTC offset; add one, like +00:00 or Z",
        "line 6: payment_platform: 'PayPal': lower-case letters, digits, '.', '_', '-'",
        "line 6: currency: 'XYZ' is not an ISO 4217 currency code",
        "line 7: txn_id: missing",
        "line 7: profile_url: 'forum/ada' is not an http(s) address",
        "line 7: nickname: missing",
        "line 8: source: give either package (a package purchase) or source, not both",
        "line 9: source: no source named 'Gamma'",
        "line 9: allowed_for: 'package' does not match the source column given",
        "line 10: commission: '-1' is not an amount like 1.99 (not negative)",
        "line 10: date: 'yesterday' is not an ISO 8601 date-time, like 2024-03-10T12:00:00+00:00",
    ]
    assert purchases(shop) == []


def test_a_csv_header_with_unknown_or_missing_columns_is_refused(
    tmp_path: Path, shop: CatalogueAdmin
) -> None:
    file = tmp_path / "stats.csv"
    file.write_text("package,downloads,total_votes\ncom.alpha.paid,1,1\n")
    with pytest.raises(OperatorDataError) as refused:
        import_stats(shop.engine, file)
    assert refused.value.problems == [
        "line 1: downloads: unknown column (known: package, total_download, total_votes, total_value_votes)",
        "line 1: total_download: missing column",
        "line 1: total_value_votes: missing column",
    ]


def test_stats_set_the_counts_and_check_the_votes(tmp_path: Path, shop: CatalogueAdmin) -> None:
    file = tmp_path / "stats.csv"
    file.write_text(
        "package,total_download,total_votes,total_value_votes\n"
        "com.alpha.paid,1500,10,42\n"
        "com.beta.tool,0,0,0\n"
    )
    assert import_stats(shop.engine, file).as_dict() == {
        "rows": 2, "added": 0, "updated": 2, "unchanged": 0,
    }  # fmt: skip
    with shop.engine.connect() as db:
        paid = db.execute(select(t.packages).where(t.packages.c.id == 1)).one()
    assert (paid.total_download, paid.total_votes, paid.total_value_votes) == (1500, 10, 42)
    assert import_stats(shop.engine, file).unchanged == 2
    bad = tmp_path / "bad.jsonl"
    write_jsonl(
        bad,
        [
            {
                "package": "com.alpha.paid",
                "total_download": 1,
                "total_votes": 2,
                "total_value_votes": 11,
            },
            {
                "package": "com.alpha.paid",
                "total_download": "x",
                "total_votes": 1,
                "total_value_votes": 1,
            },
            {"package": "com.alpha.free", "total_download": 1, "total_votes": True, "extra": 1},
        ],
    )
    with pytest.raises(OperatorDataError) as refused:
        import_stats(shop.engine, bad)
    assert refused.value.problems == [
        "line 1: total_value_votes: 11 is not the sum of 2 ratings of 1 to 5 (between 2 and 10)",
        "line 2: package: 'com.alpha.paid' is also on line 1",
        "line 2: total_download: 'x' is not a whole number (0 or more)",
        "line 3: total_votes: give a string or a number",
        "line 3: extra: unknown field (known: package, total_download, total_votes, total_value_votes)",
        "line 3: total_votes: missing",
        "line 3: total_value_votes: missing",
    ]
    with shop.engine.connect() as db:
        assert (
            db.execute(select(t.packages.c.total_download).where(t.packages.c.id == 1)).scalar()
            == 1500
        )


def test_prices_set_price_and_currency(tmp_path: Path, shop: CatalogueAdmin) -> None:
    file = write_csv(
        tmp_path / "prices.csv",
        [{"package": "com.alpha.paid", "price": "3.49", "currency": "EUR"}],
    )
    assert import_prices(shop.engine, file).updated == 1
    with shop.engine.connect() as db:
        row = db.execute(select(t.packages).where(t.packages.c.id == 1)).one()
    assert (row.price, row.currency) == ("3.49", "EUR")


def test_files_that_are_not_csv_or_json_lines_are_refused(
    tmp_path: Path, shop: CatalogueAdmin
) -> None:
    odd = tmp_path / "prices.txt"
    odd.write_text("package,price,currency\n")
    with pytest.raises(OperatorDataError, match="1 problem, nothing was imported") as refused:
        import_prices(shop.engine, odd)
    assert refused.value.problems == ["line 1: file: .txt; name it .csv or .jsonl"]
    latin = tmp_path / "prices.csv"
    latin.write_bytes(b"package,price,currency\ncaf\xe9,1,USD\n")
    with pytest.raises(OperatorDataError) as refused:
        import_prices(shop.engine, latin)
    assert refused.value.problems == ["line 2: row: not valid UTF-8 (byte 0xe9)"]
    broken = tmp_path / "prices.jsonl"
    broken.write_text(
        '{"package": "com.alpha.paid", "price": "1", "currency": "USD"}\n[1]\n{oops\n'
    )
    with pytest.raises(OperatorDataError) as refused:
        import_prices(shop.engine, broken)
    assert refused.value.problems[0] == "line 2: row: not a JSON object"
    assert refused.value.problems[1].startswith("line 3: row: not JSON (")
