"""A table of cases against the case each stands beside: is one measurably slower?

Shared by the benchmarks whose result is a ratio taken in one run (``bench/store.py``: the
store's refusals against its answers; ``bench/licence.py``: licence checks by answer), where
the microseconds move with the machine and the ratios are the result.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime


def ratio_table(
    title: str,
    unit: str,
    samples: Mapping[str, Sequence[float]],
    against: Mapping[str, str | None],
) -> tuple[list[str], dict[str, float]]:
    """Markdown lines (the title with the time, then one row per case: the median of its
    ``samples`` in microseconds and, when it stands ``against`` another, the ratio of the
    two medians), and those ratios by case."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"{title}, {when}",
        f"| case | median per {unit} (us) | against | ratio |",
        "|---|---:|---|---:|",
    ]
    ratios: dict[str, float] = {}
    for name, times in samples.items():
        mine = statistics.median(times)
        other = against.get(name)
        if other is None:
            lines.append(f"| {name} | {mine * 1e6:.0f} | | |")
            continue
        ratios[name] = mine / statistics.median(samples[other])
        lines.append(f"| {name} | {mine * 1e6:.0f} | {other} | {ratios[name]:.2f} |")
    return lines, ratios
