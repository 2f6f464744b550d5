"""Purchases, statistics and prices from CSV and JSON Lines: checked whole, written whole."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from pkgcat.ingest import OperatorDataError
from pkgcat.ingest.operator_data import import_prices, import_purchases, import_stats
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
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
    assert written.as_dict() == {
        "rows": 2, "added": 2, "updated": 0, "unchanged": 0, "ignored_columns": [],
    }  # fmt: skip
    one, two = purchases(shop)
    assert (one.package_id, one.source_id, one.allowed_for) == (1, 1, "package")
    assert (two.package_id, two.source_id, two.allowed_for) == (None, 1, "source")
    assert one.purchased_at == 1710064800  # 10:00 UTC
    assert (one.total, one.commission, one.currency, one.payment_platform) == (
        "1.99", "0.30", "USD", "paypal",
    )  # fmt: skip
    again = import_purchases(shop.engine, file)
    assert (again.added, again.updated, again.unchanged) == (0, 0, 2)
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
        "line 3: column 'package': no package 'com.nobody.nothing' in the catalogue; "
        "hint: import its repository first (pkgcat import-repo)",
        "line 4: column 'currency': 'usd' is not an ISO 4217 currency code; "
        "hint: write it in capitals: USD",
        "line 4: column 'txn_id': 'TXN-1' is also on line 2; hint: a txn_id names one purchase",
        "line 5: column 'total': '1,99' is not an amount; "
        "hint: use a point as the decimal separator: 1.99",
        "line 5: column 'date': '2024-03-10 12:00:00' has no UTC offset; "
        "hint: add one, like +00:00, or Z for UTC",
        "line 6: column 'currency': 'XYZ' is not an ISO 4217 currency code; "
        "hint: a code such as USD or EUR",
        "line 6: column 'payment_platform': 'PayPal' is not a platform name; "
        "hint: lower-case letters, digits, '.', '_', '-', like paypal",
        "line 7: column 'nickname': missing",
        "line 7: column 'txn_id': missing",
        "line 7: column 'profile_url': 'forum/ada' is not an http(s) address; "
        "hint: a whole address, like https://forum.example/u/ada",
        "line 8: column 'source': given with package; "
        "hint: give package (a package purchase) or source (the whole source), not both",
        "line 9: column 'source': no source named 'Gamma'; "
        "hint: the name given to pkgcat import-repo --source",
        "line 9: column 'allowed_for': 'package' does not match the source column given",
        "line 10: column 'commission': '-1' is negative; hint: amounts are 0 or more",
        "line 10: column 'date': 'yesterday' is not an ISO 8601 date-time; "
        "hint: write it like 2024-03-10T12:00:00+00:00",
    ]
    assert purchases(shop) == []


def test_a_csv_header_without_a_required_column_is_refused(
    tmp_path: Path, shop: CatalogueAdmin
) -> None:
    file = tmp_path / "stats.csv"
    file.write_text("package,downloads,total_votes\ncom.alpha.paid,1,1\n")
    with pytest.raises(OperatorDataError) as refused:
        import_stats(shop.engine, file)
    known = "package, total_download, total_votes, total_value_votes"
    assert refused.value.problems == [
        f"line 1: column 'total_download': missing from the header; "
        f"hint: the columns are {known}; this header has 'downloads' instead",
        f"line 1: column 'total_value_votes': missing from the header; "
        f"hint: the columns are {known}; this header has 'downloads' instead",
    ]


def test_extra_columns_are_ignored_and_named(tmp_path: Path, shop: CatalogueAdmin) -> None:
    prices = tmp_path / "prices.csv"
    prices.write_text(
        "package,price,currency,Note,\n"
        "com.alpha.paid,3.49,EUR,spring sale,\n"
    )  # fmt: skip
    written = import_prices(shop.engine, prices)
    assert (written.updated, written.ignored) == (1, ("note", ""))
    assert price_of(shop, 1) == ("3.49", "EUR")
    sales = write_jsonl(tmp_path / "sales.jsonl", [PURCHASE | {"buyer_email": "a@b.example"}])
    written = import_purchases(shop.engine, sales)
    assert written.as_dict() == {
        "rows": 1, "added": 1, "updated": 0, "unchanged": 0, "ignored_columns": ["buyer_email"],
    }  # fmt: skip


def test_column_names_are_read_without_regard_to_case(tmp_path: Path, shop: CatalogueAdmin) -> None:
    prices = tmp_path / "prices.csv"
    prices.write_text("Package,PRICE,Currency\ncom.alpha.paid,3.49,EUR\n")
    assert import_prices(shop.engine, prices).updated == 1
    assert price_of(shop, 1) == ("3.49", "EUR")
    lines = write_jsonl(
        tmp_path / "prices.jsonl",
        [{"Package": "com.beta.tool", "PRICE": "2.50", " Currency ": "GBP", "Note": "x"}],
    )
    written = import_prices(shop.engine, lines)
    assert (written.updated, written.ignored) == (1, ("note",))
    assert price_of(shop, 3) == ("2.50", "GBP")


def test_a_json_lines_key_given_twice_in_any_case_is_refused(
    tmp_path: Path, shop: CatalogueAdmin
) -> None:
    lines = write_jsonl(
        tmp_path / "prices.jsonl",
        [
            {"package": "com.alpha.paid", "price": "1", "currency": "USD"},
            {"package": "com.beta.tool", "Price": "7", "price": "8", "currency": "USD"},
        ],
    )
    with pytest.raises(OperatorDataError) as refused:
        import_prices(shop.engine, lines)
    assert refused.value.problems == [
        "line 2: column 'price': named twice in the object; hint: keep one of them"
    ]
    assert price_of(shop, 3) == ("1.99", "USD")


def test_the_delimiter_is_found_from_the_header(tmp_path: Path, shop: CatalogueAdmin) -> None:
    semicolons = tmp_path / "prices.csv"
    semicolons.write_text('package;price;currency\ncom.alpha.paid;"2,5";EUR\n')
    with pytest.raises(OperatorDataError) as refused:
        import_prices(shop.engine, semicolons)
    # Read with ';', so the comma inside the quoted value is the price's own.
    assert refused.value.problems == [
        "line 2: column 'price': '2,5' is not an amount; "
        "hint: use a point as the decimal separator: 1.99"
    ]
    tabs = tmp_path / "stats.csv"
    tabs.write_text(
        "package\ttotal_download\ttotal_votes\ttotal_value_votes\n"
        "com.alpha.paid\t7\t1\t5\n"
    )  # fmt: skip
    assert import_stats(shop.engine, tabs).updated == 1
    with shop.engine.connect() as db:
        row = db.execute(select(t.packages).where(t.packages.c.id == 1)).one()
    assert (row.total_download, row.total_votes, row.total_value_votes) == (7, 1, 5)


def test_a_named_delimiter_is_used_and_a_wrong_one_hinted(
    tmp_path: Path, shop: CatalogueAdmin
) -> None:
    file = tmp_path / "prices.csv"
    file.write_text("package|price|currency\ncom.alpha.paid|4.99|GBP\n")
    assert import_prices(shop.engine, file, delimiter="|").updated == 1
    assert price_of(shop, 1) == ("4.99", "GBP")
    with pytest.raises(OperatorDataError) as refused:
        import_prices(shop.engine, file, delimiter=",")
    assert refused.value.problems[0] == (
        "line 1: column 'package': missing from the header; hint: the columns are package, "
        "price, currency; this header has 'package|price|currency' instead; the header was "
        "split at ',': name the file's delimiter with --delimiter"
    )
    assert price_of(shop, 1) == ("4.99", "GBP")


def test_a_purchase_with_a_price_for_a_free_package_is_refused(
    tmp_path: Path, shop: CatalogueAdmin
) -> None:
    free = PURCHASE | {"package": "com.alpha.free", "txn_id": "TXN-F"}
    file = write_csv(tmp_path / "sales.csv", [PURCHASE, free])
    with pytest.raises(OperatorDataError) as refused:
        import_purchases(shop.engine, file)
    assert refused.value.problems == [
        "line 3: column 'total': 1.99 USD paid for 'com.alpha.free', a free package; "
        "hint: give the package its price first (pkgcat import-prices), or leave the purchase out"
    ]
    assert purchases(shop) == []  # the good row on line 2 is not written either
    nothing_paid = free | {"total": "0.00", "commission": "0"}
    assert import_purchases(shop.engine, write_csv(tmp_path / "ok.csv", [nothing_paid])).added == 1
    priced = write_csv(
        tmp_path / "prices.csv", [{"package": "com.alpha.free", "price": "1.99", "currency": "USD"}]
    )
    import_prices(shop.engine, priced)
    again = import_purchases(shop.engine, file)  # now that the package has a price
    assert (again.added, again.updated) == (1, 1)  # TXN-1 added; TXN-F's total updated


def test_stats_set_the_counts_and_check_the_votes(tmp_path: Path, shop: CatalogueAdmin) -> None:
    file = tmp_path / "stats.csv"
    file.write_text(
        "package,total_download,total_votes,total_value_votes\n"
        "com.alpha.paid,1500,10,42\n"
        "com.beta.tool,0,0,0\n"
    )
    assert import_stats(shop.engine, file).as_dict() == {
        "rows": 2, "added": 0, "updated": 2, "unchanged": 0, "ignored_columns": [],
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
                "total_votes": 1.5,
                "total_value_votes": 1,
            },
            {"package": "com.alpha.free", "total_download": 1, "total_votes": True, "extra": 1},
        ],
    )
    with pytest.raises(OperatorDataError) as refused:
        import_stats(shop.engine, bad)
    whole = "hint: digits only, like 1500 (0 or more)"
    assert refused.value.problems == [
        "line 1: column 'total_value_votes': 11 is not the sum of 2 ratings of 1 to 5; "
        "hint: it lies between 2 and 10",
        f"line 2: column 'total_download': 'x' is not a whole number; {whole}",
        f"line 2: column 'total_votes': '1.5' is not a whole number; {whole}",
        "line 2: column 'package': 'com.alpha.paid' is also on line 1; hint: one row per package",
        "line 3: column 'total_votes': true is not a string or a number",
        "line 3: column 'total_votes': missing",
        "line 3: column 'total_value_votes': missing",
    ]
    with shop.engine.connect() as db:
        assert (
            db.execute(select(t.packages.c.total_download).where(t.packages.c.id == 1)).scalar()
            == 1500
        )


def price_of(admin: CatalogueAdmin, package_id: int) -> tuple[str, str]:
    with admin.engine.connect() as db:
        row = db.execute(select(t.packages).where(t.packages.c.id == package_id)).one()
    return row.price, row.currency


def test_prices_set_price_and_currency(tmp_path: Path, shop: CatalogueAdmin) -> None:
    file = write_csv(
        tmp_path / "prices.csv",
        [
            {"package": "com.alpha.paid", "price": "3.49", "currency": "EUR"},
            {"package": "com.beta.tool", "price": "2", "currency": "XCG"},
        ],
    )
    assert import_prices(shop.engine, file).updated == 2
    assert price_of(shop, 1) == ("3.49", "EUR")
    assert price_of(shop, 3) == ("2", "XCG")  # ISO 4217's guilder of Curaçao, 2025


def test_currencies_without_minor_units_are_refused(tmp_path: Path, shop: CatalogueAdmin) -> None:
    file = write_csv(
        tmp_path / "prices.csv",
        [
            {"package": "com.alpha.paid", "price": "1", "currency": "XAU"},
            {"package": "com.beta.tool", "price": "1", "currency": "XTS"},
        ],
    )
    with pytest.raises(OperatorDataError) as refused:
        import_prices(shop.engine, file)
    assert refused.value.problems == [
        "line 2: column 'currency': 'XAU' is not an ISO 4217 currency code; "
        "hint: a code such as USD or EUR",
        "line 3: column 'currency': 'XTS' is not an ISO 4217 currency code; "
        "hint: a code such as USD or EUR",
    ]


def test_units_of_account_and_withdrawn_currencies_are_refused(
    tmp_path: Path, shop: CatalogueAdmin
) -> None:
    file = write_csv(
        tmp_path / "prices.csv",
        [
            {"package": "com.alpha.paid", "price": "1", "currency": "XAD"},  # Arab Accounting Dinar
            {"package": "com.alpha.free", "price": "1", "currency": "ANG"},  # XCG since 2025
            {"package": "com.beta.tool", "price": "1", "currency": "BGN"},  # the euro since 2026
        ],
    )
    with pytest.raises(OperatorDataError) as refused:
        import_prices(shop.engine, file)
    assert refused.value.problems == [
        f"line {line}: column 'currency': '{code}' is not an ISO 4217 currency code; "
        "hint: a code such as USD or EUR"
        for line, code in ((2, "XAD"), (3, "ANG"), (4, "BGN"))
    ]


def test_files_that_are_not_csv_or_json_lines_are_refused(
    tmp_path: Path, shop: CatalogueAdmin
) -> None:
    odd = tmp_path / "prices.txt"
    odd.write_text("package,price,currency\n")
    with pytest.raises(OperatorDataError, match="1 problem, nothing was imported") as refused:
        import_prices(shop.engine, odd)
    assert refused.value.problems == ["line 1: row: a .txt file; hint: name it .csv or .jsonl"]
    latin = tmp_path / "prices.csv"
    latin.write_bytes(b"package,price,currency\ncaf\xe9,1,USD\n")
    with pytest.raises(OperatorDataError) as refused:
        import_prices(shop.engine, latin)
    assert refused.value.problems == [
        "line 2: row: not valid UTF-8 (byte 0xe9); hint: save the file as UTF-8 (in a spreadsheet: CSV UTF-8)"
    ]
    broken = tmp_path / "prices.jsonl"
    broken.write_text(
        '{"package": "com.alpha.paid", "price": "1", "currency": "USD"}\n[1]\n{oops\n'
    )
    with pytest.raises(OperatorDataError) as refused:
        import_prices(shop.engine, broken)
    assert refused.value.problems[0] == (
        "line 2: row: not a JSON object; hint: one JSON object per line"
    )
    assert refused.value.problems[1].startswith("line 3: row: not JSON (")


def test_a_row_with_more_values_than_the_header_names_is_refused(
    tmp_path: Path, shop: CatalogueAdmin
) -> None:
    file = tmp_path / "prices.csv"
    file.write_text("package,price,currency\ncom.alpha.paid,1,99,USD\ncom.beta.tool,1,USD\n")
    with pytest.raises(OperatorDataError) as refused:
        import_prices(shop.engine, file)
    assert refused.value.problems == [
        "line 2: row: 4 values, the header names 3 columns; "
        "hint: a value that holds ',' must be in double quotes"
    ]
    assert price_of(shop, 3) == ("1.99", "USD")  # line 3 was good, and is not written either


def devices(admin: CatalogueAdmin) -> list[tuple[Any, ...]]:
    d = t.buyer_devices
    with admin.engine.connect() as db:
        found = [tuple(row) for row in db.execute(select(d))]
    # Sorted here: the two databases collate text differently.
    return sorted(found, key=lambda row: (row[0], row[3], row[1]))


UDID = "00008030-001A2B3C4D5E802E"
OLD_UDID = "3d0d7e5fb2ce288813306e4d4636395e047a3d28"


def test_purchases_keep_the_buyers_account_and_device_and_register_it(
    tmp_path: Path, shop: CatalogueAdmin
) -> None:
    rows = [
        PURCHASE | {"account": "acct-7", "udid": UDID, "device_model": "iPhone12,1"},
        # A second device of the same buyer, and a purchase of the whole source from it.
        PURCHASE | {"txn_id": "TXN-2", "udid": OLD_UDID, "device_model": "iPad7,5"},
        PURCHASE | {"txn_id": "TXN-3", "package": "", "source": "Alpha", "udid": OLD_UDID},
        # Another buyer on the first device; and a purchase with no device at all.
        PURCHASE | {"txn_id": "TXN-4", "nickname": "bob", "udid": UDID},
        PURCHASE | {"txn_id": "TXN-5", "nickname": "cy", "package": "com.beta.tool"},
    ]
    file = write_csv(tmp_path / "sales.csv", rows)
    assert import_purchases(shop.engine, file).added == 5
    stored = {row.txn_id: (row.account, row.udid, row.device_model) for row in purchases(shop)}
    assert stored == {
        "TXN-1": ("acct-7", UDID, "iPhone12,1"),
        "TXN-2": (None, OLD_UDID, "iPad7,5"),
        "TXN-3": (None, OLD_UDID, None),
        "TXN-4": (None, UDID, None),
        "TXN-5": (None, None, None),
    }
    assert devices(shop) == [
        (1, "ada", "acct-7", UDID, "iPhone12,1"),
        (1, "bob", None, UDID, None),
        (1, "ada", None, OLD_UDID, "iPad7,5"),
    ]
    # Again, from JSON Lines: nothing changes.
    again = import_purchases(shop.engine, write_jsonl(tmp_path / "sales.jsonl", rows))
    assert (again.added, again.updated, again.unchanged) == (0, 0, 5)
    assert len(devices(shop)) == 3


def test_a_device_registered_before_keeps_what_a_later_file_leaves_out(
    tmp_path: Path, shop: CatalogueAdmin
) -> None:
    first = PURCHASE | {"account": "acct-7", "udid": UDID, "device_model": "iPhone12,1"}
    import_purchases(shop.engine, write_jsonl(tmp_path / "a.jsonl", [first]))
    later = [PURCHASE | {"txn_id": "TXN-2", "udid": UDID}]
    import_purchases(shop.engine, write_jsonl(tmp_path / "b.jsonl", later))
    assert devices(shop) == [(1, "ada", "acct-7", UDID, "iPhone12,1")]
    newer = [PURCHASE | {"txn_id": "TXN-3", "udid": UDID, "device_model": "iPhone13,2"}]
    import_purchases(shop.engine, write_jsonl(tmp_path / "c.jsonl", newer))
    assert devices(shop) == [(1, "ada", "acct-7", UDID, "iPhone13,2")]


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("Completed", "Completed"),
        ("completed", "Completed"),
        ("REFUNDED", "Refunded"),
        ("chargeBack", "Chargeback"),
    ],
)
def test_statuses_are_read_in_any_case_and_kept_capitalised(
    tmp_path: Path, shop: CatalogueAdmin, given: str, stored: str
) -> None:
    import_purchases(shop.engine, write_jsonl(tmp_path / "a.jsonl", [PURCHASE | {"status": given}]))
    assert purchases(shop)[0].status == stored


def test_bad_statuses_accounts_and_devices_are_refused_naming_row_and_column(
    tmp_path: Path, shop: CatalogueAdmin
) -> None:
    rows = [
        PURCHASE | {"udid": UDID},
        PURCHASE | {"txn_id": "TXN-2", "status": "Pending"},
        PURCHASE | {"txn_id": "TXN-3", "status": "charge back"},
        PURCHASE | {"txn_id": "TXN-4", "udid": "0000:8030", "account": "a" * 129},
        PURCHASE | {"txn_id": "TXN-5", "udid": "f" * 65, "device_model": "x" * 65},
        PURCHASE | {"txn_id": "TXN-6", "device_model": "iPhone12,1"},
        PURCHASE | {"txn_id": "TXN-7", "udid": UDID, "device_model": "iPhone\t12"},
    ]
    file = write_csv(tmp_path / "sales.csv", rows)
    with pytest.raises(OperatorDataError) as refused:
        import_purchases(shop.engine, file)
    statuses = "hint: completed, refunded or chargeback (any case)"
    assert refused.value.problems == [
        f"line 3: column 'status': 'Pending' is not a purchase status; {statuses}",
        f"line 4: column 'status': 'charge back' is not a purchase status; {statuses}",
        "line 5: column 'account': longer than 128 characters",
        "line 5: column 'udid': '0000:8030' is not a device id; "
        "hint: letters, digits and '-' only, like 00008030-001A2B3C4D5E802E",
        "line 6: column 'udid': longer than 64 characters",
        "line 6: column 'device_model': longer than 64 characters",
        "line 7: column 'device_model': given without udid; "
        "hint: a device model describes the udid of its row",
        "line 8: column 'device_model': holds the control character U+0009 (TAB); hint: remove it",
    ]
    assert purchases(shop) == []
    assert devices(shop) == []


@pytest.mark.parametrize(
    ("write", "first"), [(write_csv, 2), (write_jsonl, 1)], ids=["csv", "jsonl"]
)
def test_control_characters_are_refused_alike_on_both_databases(
    tmp_path: Path, shop: CatalogueAdmin, write: Any, first: int
) -> None:
    rows = [
        PURCHASE | {"nickname": "ada\0"},
        PURCHASE | {"txn_id": "TXN-\x1b[2J", "nickname": "bob"},
        PURCHASE | {"txn_id": "TXN-3", "nickname": "line\nbreak"},
        PURCHASE | {"txn_id": "TXN-4", "nickname": "\U0001f469\u200d\U0001f4bb Zoë"},
    ]
    suffix = write.__name__.removeprefix("write_")
    with pytest.raises(OperatorDataError) as refused:
        import_purchases(shop.engine, write(tmp_path / f"sales.{suffix}", rows))
    assert refused.value.problems == [
        f"line {first}: column 'nickname': holds the control character U+0000 (NUL); "
        "hint: remove it",
        f"line {first + 1}: column 'txn_id': holds the control character U+001B (ESC); "
        "hint: remove it",
        f"line {first + 2}: column 'nickname': holds the control character U+000A (LF); "
        "hint: remove it",
    ]
    assert purchases(shop) == []
    # The same file without them is taken, the emoji with its joiner included.
    assert import_purchases(shop.engine, write(tmp_path / f"ok.{suffix}", rows[3:])).added == 1
    assert purchases(shop)[0].nickname == "\U0001f469\u200d\U0001f4bb Zoë"


def test_deleting_a_source_takes_its_buyers_devices(tmp_path: Path, shop: CatalogueAdmin) -> None:
    rows = [PURCHASE | {"udid": UDID}, PURCHASE | {"txn_id": "TXN-2", "package": "com.beta.tool"}]
    import_purchases(shop.engine, write_jsonl(tmp_path / "a.jsonl", rows))
    gone = shop.delete_source("Alpha", cascade=True)
    assert (gone.counts["purchases"], gone.counts["buyer_devices"]) == (1, 1)
    assert "1 registered device" in gone.describe()
    assert devices(shop) == []
    assert [row.txn_id for row in purchases(shop)] == ["TXN-2"]
