"""The decision stream: a bounded, numbered ring of the loop's events for SSE readers.

The loop appends (one thread); readers ask for what came after the last number they saw
(``Last-Event-ID``). A reader that fell further behind than the ring holds is told how many
it missed.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import asdict
from typing import Any

from gpufleet.live.source import LiveEvent


class EventRing:
    def __init__(self, size: int = 10_000) -> None:
        self._ring: deque[tuple[int, dict[str, Any]]] = deque(maxlen=size)
        self._next = 1
        self._lock = threading.Lock()

    def extend(self, events: list[LiveEvent]) -> None:
        if not events:
            return
        with self._lock:
            for ev in events:
                self._ring.append((self._next, asdict(ev)))
                self._next += 1

    @property
    def last(self) -> int:
        return self._next - 1

    def after(self, seq: int, limit: int = 1000) -> tuple[list[tuple[int, dict[str, Any]]], int]:
        """(events numbered above ``seq``, at most ``limit``; how many were lost to the ring)."""
        with self._lock:
            if not self._ring:
                return [], 0
            first = self._ring[0][0]
            missed = max(0, first - seq - 1)
            start = max(0, seq + 1 - first)
            return [self._ring[i] for i in range(start, min(len(self._ring), start + limit))], missed
