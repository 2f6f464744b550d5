"""The smoke's comparison with docs/benchmarks.md: reading the recorded table, and the 15% rule.

``bench/`` is no package of pkgcat; ``bench/reference.py`` is imported from the project
root as a namespace package, which mypy resolves and checks like the tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench import reference
from bench.reference import Comparison, Figures, Measured, TableError

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"

TABLE = """\
# Benchmarks

## Before

| workers | target | x baseline |
|---|---|---|
| 1 | details (hot id) | 9.99 |

## The table

Some prose, then a table of the machine that is not the one read:

| | |
|---|---|
| CPU | 2 vCPUs |

| workers | target | HTTP | body bytes | req/s | p50 ms | p99 ms | x baseline |
|---:|---|---:|---:|---:|---:|---:|---:|
| 1 | baseline (bare ASGI) | 200 | 1,238 | 45,543 | 1.26 | 2.50 | 1.00 |
| 1 | details (hot id) | 200 | 1,238 | 17,093 | 3.52 | 6.25 | 0.38 |
| 1 | buyers (page 1,000) | 200 | 27,725 | 12,962 | 4.84 | 1,250.00 | 0.28 |
| 2 | baseline (bare ASGI) | 200 | 1,238 | 35,942 | 1.38 | 5.00 | 1.00 |
| 2 | details (hot id) | 200 | 1,238 | 19,651 | 3.11 | 7.50 | 0.55 |

Noise: prose again.

### Goals

| goal | met |
|---|---|
| 1 | 2 |

## Curves

| workers | target | HTTP | body bytes | req/s | p50 ms | p99 ms | x baseline |
|---:|---|---:|---:|---:|---:|---:|---:|
| 1 | details (hot id) | 200 | 1,238 | 1 | 1 | 1 | 7.77 |
"""


def test_the_table_under_its_heading_is_read_with_thousands_separators() -> None:
    rows = reference.parse_table(TABLE)

    assert rows == [
        Measured(1, "baseline (bare ASGI)", 1.0, 2.5, 45543.0),
        Measured(1, "details (hot id)", 0.38, 6.25, 17093.0),
        Measured(1, "buyers (page 1,000)", 0.28, 1250.0, 12962.0),
        Measured(2, "baseline (bare ASGI)", 1.0, 5.0, 35942.0),
        Measured(2, "details (hot id)", 0.55, 7.5, 19651.0),
    ]


def test_the_p99_ratio_is_over_the_baseline_p99_of_the_same_worker_count() -> None:
    rows = reference.parse_table(TABLE)

    one = reference.figures(rows, workers=1)
    two = reference.figures(rows, workers=2)

    assert one["details (hot id)"] == Figures(ratio=0.38, p99_ratio=2.5)
    assert one["buyers (page 1,000)"] == Figures(ratio=0.28, p99_ratio=500.0)
    assert two["details (hot id)"] == Figures(ratio=0.55, p99_ratio=1.5)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("# Benchmarks\n\nno such section\n", 'no "## The table" heading'),
        ("## The table\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", "no table with columns"),
        (
            "## The table\n\n| workers | target | p99 ms | x baseline |\n|---|---|---|---|\n",
            "has no rows",
        ),
        (
            "## The table\n\n| workers | target | p99 ms | x baseline |\n|---|---|---|---|\n"
            "| 1 | baseline (bare ASGI) | n/a | 1.00 |\n",
            "n/a",
        ),
        (
            "## The table\n\n| workers | target | p99 ms | x baseline |\n|---|---|---|---|\n"
            "| 1 | baseline (bare ASGI) | 2.00 |\n",
            "3 cells, not 4",
        ),
    ],
)
def test_an_unreadable_table_is_a_table_error(text: str, reason: str) -> None:
    with pytest.raises(TableError, match=reason):
        reference.parse_table(text)


def test_figures_need_the_baseline_row() -> None:
    rows = [Measured(1, "details (hot id)", 0.38, 6.2)]

    with pytest.raises(TableError, match="baseline"):
        reference.figures(rows)


@pytest.mark.parametrize(
    ("now", "dropped"),
    [
        (0.38, False),  # as recorded
        (0.34, False),  # 10.5% below
        (0.3231, False),  # 14.97% below: within the 15%
        (0.3229, True),  # 15.03% below
        (0.21, True),
        (0.60, False),  # a rise never warns
    ],
)
def test_a_ratio_more_than_15_percent_below_the_recorded_one_has_dropped(
    now: float, dropped: bool
) -> None:
    comparison = Comparison("details (hot id)", Figures(now, 9.0), Figures(0.38, 2.4))

    assert comparison.dropped is dropped


def test_one_warning_line_names_every_target_that_dropped_and_only_those() -> None:
    recorded = {
        "details (hot id)": Figures(0.38, 2.40),
        "details (random ids)": Figures(0.32, 2.57),
        "invalid key": Figures(0.58, 1.52),
    }
    now = {
        reference.BASELINE: Figures(1.0, 1.0),
        "details (hot id)": Figures(0.21, 3.10),
        "details (random ids)": Figures(0.30, 2.60),
        "invalid key": Figures(0.40, 1.50),
        "buyers (page 10)": Figures(0.01, 9.00),  # not recorded: not compared
    }

    comparisons = reference.compare(now, recorded)
    line = reference.warning(comparisons, smoke=True)

    assert [c.target for c in comparisons] == [
        "details (hot id)",
        "details (random ids)",
        "invalid key",
    ]
    assert line is not None
    assert line.startswith("WARNING: ")
    assert "\n" not in line
    assert "details (hot id) 0.21x against 0.38x" in line
    assert "invalid key 0.40x against 0.58x" in line
    assert "random ids" not in line
    assert "buyers" not in line
    assert "noisy" in line
    assert "make bench" in line


def test_no_warning_when_nothing_dropped() -> None:
    same = {"details (hot id)": Figures(0.38, 2.4)}

    assert reference.warning(reference.compare(same, same), smoke=True) is None


def test_the_report_sets_the_run_beside_the_doc_and_warns_on_a_drop(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text(TABLE, encoding="utf-8")
    run = [
        Measured(1, reference.BASELINE, 1.0, 4.0),
        Measured(1, "details (hot id)", 0.20, 20.0),
        Measured(1, "usage (days=30)", 0.10, 30.0),
    ]

    lines = reference.report(run, doc, smoke=True)

    row = next(line for line in lines if "details (hot id)" in line and "WARNING" not in line)
    assert row.split()[-5:] == ["0.20", "0.38", "-47%", "5.00", "2.50"]
    assert "usage (days=30)" not in "\n".join(lines)  # not recorded in TABLE
    warnings = [line for line in lines if line.startswith("WARNING:")]
    assert len(warnings) == 1
    assert "details (hot id) 0.20x against 0.38x" in warnings[0]


def test_the_report_says_so_in_one_line_when_the_doc_is_missing_or_unreadable(
    tmp_path: Path,
) -> None:
    run = [Measured(1, reference.BASELINE, 1.0, 4.0), Measured(1, "details (hot id)", 0.2, 8.0)]
    unreadable = tmp_path / "unreadable.md"
    unreadable.write_text("## The table\n\nnothing recorded yet\n", encoding="utf-8")
    binary = tmp_path / "binary.md"
    binary.write_bytes(b"\xff\xfe\x00## The table")

    for doc in (tmp_path / "missing.md", unreadable, binary, tmp_path):
        lines = reference.report(run, doc, smoke=True)

        assert len(lines) == 1
        assert lines[0].startswith("no comparison: ")


def test_the_recorded_table_of_docs_benchmarks_md_has_a_1_worker_details_ratio() -> None:
    recorded = reference.read_recorded(DOC, workers=1)

    details = {t: f for t, f in recorded.items() if t.startswith("details (")}
    assert "details (hot id)" in details
    for target, figures in details.items():
        assert 0 < figures.ratio < 2, target
        assert figures.p99_ratio > 0, target


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    """A docs/benchmarks.md recording :data:`TABLE`."""
    path = tmp_path / "benchmarks.md"
    path.write_text(TABLE, encoding="utf-8")
    return path


def busy_run(baseline_rate: float, details: float, invalid: float) -> list[Measured]:
    """A smoke's rows: the baseline's req/s, and two targets' ratios (TABLE records both)."""
    return [
        Measured(1, reference.BASELINE, 1.0, 4.0, baseline_rate),
        Measured(1, "details (hot id)", details, 8.0, baseline_rate * details),
        Measured(1, "buyers (page 1,000)", invalid, 8.0, baseline_rate * invalid),
    ]


def test_a_busy_machine_is_told_from_a_drop_when_the_baseline_itself_moved(doc: Path) -> None:
    """Every ratio 40% low while the bare baseline did 44% fewer req/s: the machine, not pkgcat."""
    lines = reference.report(busy_run(25_500, 0.23, 0.17), doc, smoke=True)

    moved = [line for line in lines if line.startswith("the baseline itself moved")]
    assert len(moved) == 1
    assert "25,500 req/s against 45,543 recorded (-44%)" in moved[0]
    assert not [line for line in lines if line.startswith("WARNING:")]


def test_on_a_busy_machine_a_target_that_fell_below_the_others_is_still_flagged(doc: Path) -> None:
    # details fell to 0.10x (-74%), buyers to 0.17x (-39%): against the others, details dropped.
    lines = reference.report(busy_run(25_500, 0.10, 0.17), doc, smoke=True)

    warnings = [line for line in lines if line.startswith("WARNING:")]
    assert len(warnings) == 1
    assert "details (hot id) 0.10x against 0.38x" in warnings[0]
    assert "buyers" not in warnings[0]
    assert "below the other targets' common change" in warnings[0]


def test_with_the_baseline_where_it_was_a_drop_is_measured_against_the_doc(doc: Path) -> None:
    # The baseline within 25% of the recorded req/s: both targets' 40% drops are warned.
    lines = reference.report(busy_run(40_000, 0.23, 0.17), doc, smoke=True)

    assert not [line for line in lines if line.startswith("the baseline itself moved")]
    warnings = [line for line in lines if line.startswith("WARNING:")]
    assert len(warnings) == 1
    assert "details (hot id) 0.23x against 0.38x" in warnings[0]
    assert "buyers (page 1,000) 0.17x against 0.28x" in warnings[0]
