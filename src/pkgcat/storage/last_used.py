"""When a key's last-used time is worth a write: at most once a minute per key and worker."""

from __future__ import annotations

TOUCH_INTERVAL = 60
"""Seconds between two writes of one key's ``last_used_at``, to keep writes off the hot path."""


class LastUsed:
    """Which keys' last-used times are due for a write (at most one a minute per key)."""

    def __init__(self, interval: int = TOUCH_INTERVAL) -> None:
        self._interval = interval
        self._written: dict[int, int] = {}

    def due(self, key_id: int, when: int) -> bool:
        last = self._written.get(key_id)
        if last is not None and when - last < self._interval:
            return False
        self._written[key_id] = when
        return True
