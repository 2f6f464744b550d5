"""The figures docs/benchmarks.md records, and a run's ratios set beside them.

``make bench`` is the measurement; its table is copied by hand into
docs/benchmarks.md under "## The table". The smoke (``run.py --smoke``, run by
CI) measures the same targets for a second each on a tiny catalogue, so its
figures are rough. Set beside the recorded ones they still show a request path
that got much slower: :func:`report` prints both, and one ``WARNING:`` line
when a ratio fell more than :data:`DROP` below the recorded one. It never
fails a run: a shared machine is too noisy for a gate.

A busy machine lowers every ratio at once: the bare baseline, which does next to
nothing a request, keeps up with wrk far better than pkgcat does when other work
takes the cores. That shows in the baseline's own req/s, far below the recorded
run's (more than :data:`BASELINE_DROP`). Then :func:`report` says the baseline
moved, and a target is flagged only when its ratio fell more than :data:`DROP`
below the common fall of all targets (their median): a drop of one target
against the others is still seen, a machine's load is not taken for one.

Standard library only, and no other module of bench/: the tests import it.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

BASELINE = "baseline (bare ASGI)"
DROP = 0.15
"""How far below the recorded ratio a ratio may fall before the warning (0.15: 15%)."""
BASELINE_DROP = 0.25
"""How far below the recorded req/s the baseline's may fall before the machine counts as busy."""
SECTION = "The table"
"""The heading (level 2) of docs/benchmarks.md the recorded table is under."""
COLUMNS = ("workers", "target", "p99 ms", "x baseline")
"""The columns read (by name, so their order may change)."""
RATE = "req/s"
"""A column read when the table has it: the baseline's own figure (has the machine moved?)."""


class TableError(ValueError):
    """The recorded table is missing or cannot be read."""


@dataclass(frozen=True)
class Measured:
    """One row of a table: a target's ratio to the baseline's req/s, and its p99."""

    workers: int
    target: str
    ratio: float
    p99_ms: float
    requests_per_second: float | None = None


@dataclass(frozen=True)
class Figures:
    """What is compared: req/s over the baseline's, and p99 over the baseline's p99."""

    ratio: float
    p99_ratio: float


@dataclass(frozen=True)
class Comparison:
    target: str
    now: Figures
    recorded: Figures

    @property
    def change(self) -> float:
        """The ratio now over the recorded one: 0.8 is 20% below."""
        return self.now.ratio / self.recorded.ratio if self.recorded.ratio else 1.0

    @property
    def dropped(self) -> bool:
        """Whether the ratio fell more than :data:`DROP` below the recorded one."""
        return self.now.ratio < (1 - DROP) * self.recorded.ratio

    def dropped_beside(self, common: float) -> bool:
        """Whether the ratio fell more than :data:`DROP` below the targets' ``common`` change."""
        return self.change < (1 - DROP) * common


def _number(cell: str) -> float:
    """A figure of the table: ``45,543`` or ``0.38``."""
    return float(cell.replace(",", ""))


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def section(markdown: str, heading: str = SECTION) -> str:
    """The body under the level-2 ``heading``, up to the next level-2 heading."""
    match = re.search(rf"^## {re.escape(heading)}[ \t]*$", markdown, flags=re.MULTILINE)
    if match is None:
        raise TableError(f'no "## {heading}" heading')
    rest = markdown[match.end() :]
    following = re.search(r"^## ", rest, flags=re.MULTILINE)
    return rest if following is None else rest[: following.start()]


def parse_table(markdown: str, heading: str = SECTION) -> list[Measured]:
    """The rows of the first table under ``heading`` that has the :data:`COLUMNS`."""
    lines = section(markdown, heading).splitlines()
    for n, line in enumerate(lines):
        if not line.lstrip().startswith("|"):
            continue
        header = _cells(line)
        if not all(name in header for name in COLUMNS):
            continue
        at = {name: header.index(name) for name in COLUMNS}
        rate = header.index(RATE) if RATE in header else None
        rows: list[Measured] = []
        for row in lines[n + 1 :]:
            if not row.lstrip().startswith("|"):
                break
            if re.fullmatch(r"\|[\s|:-]+\|", row.strip()):
                continue  # the |---:|---| line under the header
            cells = _cells(row)
            if len(cells) != len(header):
                raise TableError(f"{len(cells)} cells, not {len(header)}: {row.strip()}")
            try:
                rows.append(
                    Measured(
                        workers=int(cells[at["workers"]]),
                        target=cells[at["target"]],
                        ratio=_number(cells[at["x baseline"]]),
                        p99_ms=_number(cells[at["p99 ms"]]),
                        requests_per_second=None if rate is None else _number(cells[rate]),
                    )
                )
            except ValueError as error:
                raise TableError(f"{error}: {row.strip()}") from None
        if not rows:
            raise TableError(f'the table under "## {heading}" has no rows')
        return rows
    raise TableError(f'no table with columns {", ".join(COLUMNS)} under "## {heading}"')


def figures(rows: Iterable[Measured], workers: int = 1) -> dict[str, Figures]:
    """Each target of ``workers`` to its figures; the p99 is divided by the baseline's."""
    mine = [r for r in rows if r.workers == workers]
    baseline = next((r for r in mine if r.target == BASELINE), None)
    if baseline is None or baseline.p99_ms <= 0:
        raise TableError(f'no usable "{BASELINE}" row for {workers} worker(s)')
    return {r.target: Figures(r.ratio, r.p99_ms / baseline.p99_ms) for r in mine}


def read_recorded(path: Path, workers: int = 1) -> dict[str, Figures]:
    """The recorded figures of ``workers``; :class:`TableError` or ``OSError`` if unreadable."""
    return figures(parse_table(path.read_text(encoding="utf-8")), workers)


def baseline_rate(rows: Iterable[Measured], workers: int = 1) -> float | None:
    """The baseline's req/s with ``workers``, when the rows have it."""
    return next(
        (r.requests_per_second for r in rows if r.workers == workers and r.target == BASELINE),
        None,
    )


def busy(now: float, recorded: float) -> bool:
    """Whether the baseline's req/s fell more than :data:`BASELINE_DROP` below the recorded."""
    return now < (1 - BASELINE_DROP) * recorded


def compare(now: dict[str, Figures], recorded: dict[str, Figures]) -> list[Comparison]:
    """Every target of ``now`` also recorded, baseline apart, in the order of ``now``."""
    return [
        Comparison(target, figures_now, recorded[target])
        for target, figures_now in now.items()
        if target != BASELINE and target in recorded
    ]


def warning(comparisons: Sequence[Comparison], smoke: bool, busy: bool = False) -> str | None:
    """One line naming every target whose ratio dropped, or ``None`` when none did.

    ``busy``: the machine is (the baseline moved), so a drop is one below the targets'
    common change, not below the recorded ratio."""
    common = statistics.median(c.change for c in comparisons) if comparisons else 1.0
    dropped = [c for c in comparisons if (c.dropped_beside(common) if busy else c.dropped)]
    if not dropped:
        return None
    which = "; ".join(
        f"{c.target} {c.now.ratio:.2f}x against {c.recorded.ratio:.2f}x" for c in dropped
    )
    why = (
        "The smoke is noisy (1 s rounds on a tiny catalogue); `make bench` is the measurement."
        if smoke
        else "Rerun `make bench` to confirm before updating docs/benchmarks.md."
    )
    below = (
        f"more than {DROP:.0%} below the other targets' common change ({common - 1:+.0%})"
        if busy
        else f"more than {DROP:.0%} below docs/benchmarks.md"
    )
    return f"WARNING: req/s ratio {below}: {which}. {why}"


def report(now: Iterable[Measured], doc: Path, smoke: bool, workers: int = 1) -> list[str]:
    """The lines to print: the comparison, then the warning if any; never raises for the doc."""
    name = f"{doc.parent.name}/{doc.name}"
    now = list(now)
    try:
        rows = parse_table(doc.read_text(encoding="utf-8"))
        recorded = figures(rows, workers)
    except FileNotFoundError:
        return [f"no comparison: {name} is missing"]
    except (OSError, UnicodeDecodeError, TableError) as error:
        return [f"no comparison: cannot read the table of {name} ({error})"]
    try:
        measured = figures(now, workers)
    except TableError as error:
        return [f"no comparison: this run has {error}"]
    comparisons = compare(measured, recorded)
    if not comparisons:
        return [f"no comparison: no target of this run is in {name}"]
    lines = [
        f"against {name}, {workers} worker{'s' if workers > 1 else ''} (ratio: req/s over the"
        " baseline's, higher is better; p99 ratio: p99 over the baseline's, lower is better)",
        f"  {'target':<24} {'ratio now':>9}  {'recorded':>8}  {'change':>6}"
        f"  {'p99 ratio now':>13}  {'recorded':>8}",
    ]
    for c in comparisons:
        change = f"{c.now.ratio / c.recorded.ratio - 1:+.0%}" if c.recorded.ratio else "-"
        lines.append(
            f"  {c.target:<24} {c.now.ratio:>9.2f}  {c.recorded.ratio:>8.2f}  {change:>6}"
            f"  {c.now.p99_ratio:>13.2f}  {c.recorded.p99_ratio:>8.2f}"
        )
    rate_now, rate_recorded = baseline_rate(now, workers), baseline_rate(rows, workers)
    moved = False
    if rate_now is not None and rate_recorded is not None and busy(rate_now, rate_recorded):
        moved = True
        lines.append(
            f"the baseline itself moved: the bare server did {rate_now:,.0f} req/s against "
            f"{rate_recorded:,.0f} recorded ({rate_now / rate_recorded - 1:+.0%}): this machine "
            "is busier than the recorded run, which lowers every ratio; a target is flagged "
            f"only when it fell more than {DROP:.0%} below the others"
        )
    line = warning(comparisons, smoke, busy=moved)
    if line is not None:
        lines.append(line)
    return lines
