"""Re-imports, the record details shows, and repository layouts, on generated repositories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import update

from pkgcat.ingest import ImportOptions, Selection, import_repository, workers
from pkgcat.ingest.control import iter_stanzas
from pkgcat.ingest.limits import ImportLimits
from pkgcat.storage import schema as t
from pkgcat.storage.admin import CatalogueAdmin
from tests import factories as f
from tests.ingest.conftest import (
    Importer,
    count,
    package_row,
    records,
    release,
    stanza,
    write_repo,
)

URL = "https://repo.example/"


def test_a_changed_record_is_updated_in_place_and_the_rest_untouched(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    write_repo(tmp_path, [stanza("com.example.a", Name="A"), stanza("com.example.b", Name="B")])
    load(tmp_path, url=URL)
    (a_before, b_before) = records(admin)
    write_repo(tmp_path, [stanza("com.example.a", Name="A2"), stanza("com.example.b", Name="B")])
    summary = load(tmp_path, url=URL).as_dict()
    assert (summary["records"]["updated"], summary["records"]["unchanged"]) == (1, 1)
    assert (summary["packages"]["updated"], summary["packages"]["unchanged"]) == (1, 1)
    (a_after, b_after) = records(admin)
    assert (a_after.id, a_after.name) == (a_before.id, "A2")
    assert tuple(b_after) == tuple(b_before)
    assert package_row(admin, "com.example.a").name == "A2"


def test_a_package_gone_from_the_index_goes_offline_keeping_purchases_stats_and_price(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    write_repo(
        tmp_path, [stanza("com.example.a"), stanza("com.example.gone", Tag="cydia::commercial")]
    )
    load(tmp_path, url=URL)
    gone = package_row(admin, "com.example.gone")
    with admin.engine.begin() as db:
        db.execute(
            update(t.packages)
            .where(t.packages.c.id == gone.id)
            .values(
                price="2.99", currency="EUR", total_download=77, total_votes=3, total_value_votes=12
            )
        )
        db.execute(
            t.purchases.insert().values(f.purchase(gone.source_id, gone.id, f.T0, txn_id="KEEP-ME"))
        )
    write_repo(tmp_path, [stanza("com.example.a")])
    summary = load(tmp_path, url=URL).as_dict()
    assert summary["packages"]["set_offline"] == 1
    assert summary["records"]["removed"] == 1
    row = package_row(admin, "com.example.gone")
    assert (row.id, row.online, row.record_id) == (gone.id, False, None)
    assert (row.price, row.currency, row.total_download, row.total_value_votes) == (
        "2.99",
        "EUR",
        77,
        12,
    )
    assert count(admin, t.purchases) == 1
    # Back in the index: online again, same row, statistics and price kept.
    write_repo(
        tmp_path,
        [stanza("com.example.a"), stanza("com.example.gone", "2.0", Tag="cydia::commercial")],
    )
    assert load(tmp_path, url=URL).as_dict()["packages"]["updated"] == 1
    back = package_row(admin, "com.example.gone")
    assert (back.id, back.online, back.version, back.price, back.total_votes) == (
        gone.id,
        True,
        "2.0",
        "2.99",
        3,
    )


def test_details_show_the_newest_version_by_dpkg_rules(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    versions = ["1.0", "9.9", "1:0.1~beta", "1:0.1~alpha", "2.0~rc1"]
    write_repo(tmp_path, [stanza("com.example.a", v) for v in versions])
    load(tmp_path, url=URL)
    # The epoch beats everything without one; ~beta sorts after ~alpha.
    assert package_row(admin, "com.example.a").version == "1:0.1~beta"
    assert len(records(admin, "com.example.a")) == 5


def test_architecture_preference_decides_among_the_newest_version(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    write_repo(
        tmp_path,
        [
            stanza("com.example.a", "1.0", "iphoneos-arm64"),
            stanza("com.example.a", "2.0", "iphoneos-arm", Name="old-arm"),
            stanza("com.example.a", "2.0", "iphoneos-arm64", Name="new-arm64"),
            stanza("com.example.a", "2.0", "zz-unlisted"),
        ],
    )
    load(tmp_path, url=URL)
    assert package_row(admin, "com.example.a").architecture == "iphoneos-arm64"
    # Another preference, same unchanged index: the shown record changes, the records do not.
    summary = load(tmp_path, url=URL, architectures=("iphoneos-arm", "iphoneos-arm64")).as_dict()
    assert (summary["records"]["unchanged"], summary["packages"]["updated"]) == (4, 1)
    assert package_row(admin, "com.example.a").name == "old-arm"
    load(tmp_path, url=URL, architectures=("amd64",))
    # None listed: by name, and "iphoneos-arm" < "iphoneos-arm64" < "zz-unlisted".
    assert package_row(admin, "com.example.a").architecture == "iphoneos-arm"


def test_a_package_of_another_source_is_skipped(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    write_repo(tmp_path / "one", [stanza("com.shared.tweak")])
    write_repo(tmp_path / "two", [stanza("com.shared.tweak", "9.0"), stanza("com.two.own")])
    load(tmp_path / "one", source="One", url="https://one.example/")
    summary = load(tmp_path / "two", source="Two", url="https://two.example/").as_dict()
    assert summary["skipped"] == [
        {
            "index": "Packages",
            "line": 1,
            "package": "com.shared.tweak",
            "reason": "package belongs to source 'One'",
        }
    ]
    assert package_row(admin, "com.shared.tweak").version == "1.0"


def test_mixed_case_ids_import_but_never_a_second_spelling_of_one(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    # Repositories in the wild hold ids with capitals; apt reads them without regard to case,
    # so another source's id, or this one's, in another case would be the same package.
    write_repo(tmp_path / "one", [stanza("com.shared.tweak"), stanza("Com.One.Mixed")])
    write_repo(
        tmp_path / "two",
        [
            stanza("COM.SHARED.TWEAK", "9.0"),
            stanza("com.one.mixed", "9.0"),
            stanza("Com.Two.Mixed"),
            stanza("com.two.MIXED", "2.0"),
        ],
    )
    first = load(tmp_path / "one", source="One", url="https://one.example/").as_dict()
    assert (first["skipped"], first["packages"]["added"]) == ([], 2)
    summary = load(tmp_path / "two", source="Two", url="https://two.example/").as_dict()
    assert [(s["line"], s["package"], s["reason"]) for s in summary["skipped"]] == [
        (1, "COM.SHARED.TWEAK", "package belongs to source 'One' (as 'com.shared.tweak', in another letter case)"),
        (8, "com.one.mixed", "package belongs to source 'One' (as 'Com.One.Mixed', in another letter case)"),
        (22, "com.two.MIXED", "same package as 'Com.Two.Mixed' in another letter case"),
    ]  # fmt: skip
    assert package_row(admin, "com.shared.tweak").version == "1.0"
    assert package_row(admin, "Com.Two.Mixed").version == "1.0"
    # Imported again, unchanged: the same skips, nothing written.
    again = load(tmp_path / "two", source="Two", url="https://two.example/").as_dict()
    assert len(again["skipped"]) == 3
    assert again["packages"]["added"] == 0


def test_a_commercial_package_has_no_price_until_the_operator_gives_one(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    write_repo(
        tmp_path,
        [
            stanza("com.example.paid", Tag="role::hacker, cydia::commercial"),
            stanza("com.example.free"),
        ],
    )
    load(tmp_path, url=URL)
    paid, free = package_row(admin, "com.example.paid"), package_row(admin, "com.example.free")
    assert (paid.commercial, paid.price) == (True, None)
    assert (free.commercial, free.price) == (False, None)


def test_refresh_reads_every_record_again(tmp_path: Path, load: Importer) -> None:
    write_repo(tmp_path, [stanza("com.example.a"), stanza("com.example.b")])
    load(tmp_path, url=URL)
    summary = load(tmp_path, url=URL, refresh=True).as_dict()
    assert (summary["records"]["updated"], summary["records"]["unchanged"]) == (2, 0)


def test_another_repository_address_re_reads_every_record(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    write_repo(tmp_path, [stanza("com.example.a", Icon="icons/a.png")])
    load(tmp_path, url=URL)
    summary = load(tmp_path, url="https://mirror.example/repo/").as_dict()
    assert summary["records"]["updated"] == 1
    assert package_row(admin, "com.example.a").icon == "https://mirror.example/repo/icons/a.png"


def test_descriptions_addresses_and_relations_are_mapped(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    long = "Short one\n  indented\n .\n second paragraph"
    write_repo(
        tmp_path,
        [
            stanza(
                "com.example.a",
                Description=long,
                Maintainer="Maint <m@example.org>",
                Homepage="https://home.example/a",
                Depends="libfoo (>= 1.0) | libbar, firmware (>= 14.0)",
                Pre_depends="dpkg (>= 1.19)",
                Conflicts="com.example.old",
                Replaces="com.example.old (<< 2)",
                SileoDepiction="depictions/a.json",
            )
        ],
    )
    load(tmp_path, url=URL)
    row = package_row(admin, "com.example.a")
    assert (row.description, row.long_description) == ("Short one", " indented\n\nsecond paragraph")
    assert row.author == "Maint <m@example.org>"  # no Author: the Maintainer
    assert row.url == "https://repo.example/depictions/a.json"  # SileoDepiction before Homepage
    (record,) = records(admin, "com.example.a")
    assert record.depiction == "https://repo.example/depictions/a.json"
    assert json.loads(record.relations) == {
        "pre-depends": [[{"name": "dpkg", "version": [">=", "1.19"]}]],
        "depends": [
            [{"name": "libfoo", "version": [">=", "1.0"]}, {"name": "libbar"}],
            [{"name": "firmware", "version": [">=", "14.0"]}],
        ],
        "conflicts": [[{"name": "com.example.old"}]],
        "replaces": [[{"name": "com.example.old", "version": ["<<", "2"]}]],
    }


def test_screenshots_from_a_sileo_depiction_at_any_depth(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    depiction = {
        "class": "DepictionTabView",
        "tabs": [
            {"class": "DepictionStackView", "views": [
                {"class": "DepictionScreenshotsView", "screenshots": [
                    {"url": "shots/1.png"}, {"url": "https://cdn.example/2.png"},
                ], "ipad": {"screenshots": [{"url": "shots/ipad.png"}]}},
            ]},
            {"class": "DepictionStackView", "views": [{"class": "DepictionStackView", "views": [
                {"class": "DepictionScreenshotsView", "screenshots": [{"url": "shots/1.png"}, {"url": "deep.png"}]},
            ]}]},
        ],
    }  # fmt: skip
    (tmp_path / "sileo").mkdir()
    (tmp_path / "sileo" / "a.json").write_text(json.dumps(depiction))
    (tmp_path / "sileo" / "broken.json").write_text('{"class": "DepictionTabView",}')
    write_repo(
        tmp_path,
        [
            stanza("com.example.a", SileoDepiction="./sileo/a.json"),
            stanza("com.example.b", SileoDepiction="./sileo/broken.json"),
            stanza("com.example.c", SileoDepiction="https://elsewhere.example/c.json"),
        ],
    )
    summary = load(tmp_path, url=URL)
    assert json.loads(package_row(admin, "com.example.a").screenshots) == [
        "https://repo.example/sileo/shots/1.png",
        "https://cdn.example/2.png",
        "https://repo.example/sileo/shots/ipad.png",
        "https://repo.example/sileo/deep.png",
    ]
    assert package_row(admin, "com.example.b").screenshots == "[]"
    assert any(
        "1 depiction(s) could not be read, e.g. https://repo.example/sileo/broken.json: not a JSON"
        in w
        for w in summary.warnings
    )
    assert any("1 depiction(s) outside the repository were not read" in w for w in summary.warnings)


def test_a_dists_tree_is_read_per_component_and_architecture(
    tmp_path: Path, load: Importer, admin: CatalogueAdmin
) -> None:
    suite = tmp_path / "dists" / "stable"
    indexes = {
        "main/binary-iphoneos-arm/Packages": stanza("com.example.main").encode(),
        "main/binary-iphoneos-arm64/Packages": stanza(
            "com.example.main", architecture="iphoneos-arm64"
        ).encode(),
        "extra/binary-iphoneos-arm/Packages": stanza("com.example.extra").encode(),
    }
    for name, data in indexes.items():
        (suite / name).parent.mkdir(parents=True)
        (suite / name).write_bytes(data)
    (suite / "Release").write_bytes(
        release(indexes, Components="main extra", Architectures="iphoneos-arm iphoneos-arm64")
    )
    summary = load(tmp_path, url=URL).as_dict()  # one suite: found without --suite
    assert [i["name"] for i in summary["indexes"]] == [
        "dists/stable/main/binary-iphoneos-arm/Packages",
        "dists/stable/main/binary-iphoneos-arm64/Packages",
        "dists/stable/extra/binary-iphoneos-arm/Packages",
    ]
    assert all(i["verified"] == "SHA256" for i in summary["indexes"])
    assert count(admin, t.package_records) == 3
    assert package_row(admin, "com.example.main").architecture == "iphoneos-arm64"
    only = load(tmp_path, url=URL, selection=Selection(suite="stable", components=("extra",)))
    assert only.as_dict()["packages"]["set_offline"] == 1


def test_progress_reaches_the_number_of_stanzas_parsed(
    tmp_path: Path, admin: CatalogueAdmin
) -> None:
    write_repo(tmp_path, [stanza(f"com.example.p{n}") for n in range(1200)])
    seen: list[tuple[int, int]] = []
    import_repository(
        admin.engine,
        str(tmp_path),
        ImportOptions(source="R", url=URL, jobs=1),
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen[-1] == (1200, 1200)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def test_parallel_parsing_gives_the_records_of_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = "\n".join(
        stanza(f"com.example.p{n}", Tag="cydia::commercial" if n % 3 else None) for n in range(300)
    ).encode()
    data += b"\nPackage: broken\n"
    slices = [(0, start, end) for _, start, end in iter_stanzas(data)]
    one = workers.map_stanzas(URL, ImportLimits(), [data], slices, jobs=1)
    monkeypatch.setattr(workers, "PARALLEL_FROM", 10)
    monkeypatch.setattr(workers, "TASK", 40)  # the workers' 200 stanzas in 5 tasks
    several = workers.map_stanzas(URL, ImportLimits(), [data], slices, jobs=3)
    assert several == one
    assert one[-1] == "missing required fields Version, Architecture, MD5sum"
    assert len(one) == 301
