"""The curves of ``run.py`` as CSV files and PNG plots (matplotlib, Agg backend)."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib as mpl

mpl.use("Agg")  # files only: no display needed

import matplotlib.pyplot as plt  # after mpl.use: the backend is chosen first


def write_csv(rows: Sequence[dict[str, Any]], path: Path) -> None:
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: f"{v:.3f}" if isinstance(v, float) else v for k, v in row.items()})


def _plot(
    path: Path,
    x: Sequence[float],
    series: dict[str, Sequence[float]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    logx: bool,
    ymin_zero: bool = True,
) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for label, ys in series.items():
        ax.plot(x, ys, marker="o", label=label)
    if logx:
        ax.set_xscale("log")
    if ymin_zero:
        ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    if len(series) > 1:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_all(results: dict[str, Any], folder: Path) -> None:
    """``bench-<curve>.csv`` and ``bench-<curve>.png`` for each curve in ``results``."""
    sizes, pages, days, imports = (
        results["sizes"],
        results["pages"],
        results["days"],
        results["imports"],
    )
    write_csv(sizes, folder / "bench-catalogue-size.csv")
    _plot(
        folder / "bench-catalogue-size.png",
        [r["packages"] for r in sizes],
        {"details (random ids)": [r["req_per_s"] for r in sizes]},
        title="details req/s against catalogue size (1 worker, 64 connections)",
        xlabel="packages in the catalogue",
        ylabel="req/s",
        logx=True,
    )
    write_csv(pages, folder / "bench-buyers-pages.csv")
    _plot(
        folder / "bench-buyers-pages.png",
        [r["page"] for r in pages],
        {"p50": [r["p50_ms"] for r in pages], "p99": [r["p99_ms"] for r in pages]},
        title="buyers latency against page (limit 100, 1 connection)",
        xlabel="page",
        ylabel="ms",
        logx=True,
    )
    write_csv(days, folder / "bench-usage-days.csv")
    _plot(
        folder / "bench-usage-days.png",
        [r["days"] for r in days],
        {"p50": [r["p50_ms"] for r in days], "p99": [r["p99_ms"] for r in days]},
        title="usage latency against days (1 connection)",
        xlabel="days",
        ylabel="ms",
        logx=False,
    )
    write_csv(imports, folder / "bench-import.csv")
    _plot(
        folder / "bench-import.png",
        [r["stanzas"] for r in imports],
        {"import_repository": [r["seconds"] for r in imports]},
        title=f"import time against index size ({imports[0]['index']})",
        xlabel="stanzas in the index",
        ylabel="seconds",
        logx=False,
    )
