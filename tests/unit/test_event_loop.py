"""The event loop `pkgcat serve` runs its workers on."""

from __future__ import annotations

import sys

import pytest
from granian.constants import Loops

from pkgcat.cli.serve import event_loop


def test_the_workers_run_on_uvloop_where_it_is_installed() -> None:
    assert event_loop() is Loops.uvloop


def test_without_uvloop_the_workers_run_on_asyncios_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where uvloop cannot be imported (Windows, PyPy), asyncio's own loop, not a crash loop."""
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if it were not installed
    assert event_loop() is Loops.asyncio
