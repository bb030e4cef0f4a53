"""What a page derives from the live world, computed once per published snapshot.

The loop publishes a new immutable ``LiveSnapshot`` after each tick and never changes one, so the
snapshot object is its own version: a value built from it stays right for as long as it is the
published one. At 100,000 pending jobs the Overview's figures (pending by reason, stranded GPUs,
the biggest waiting gang) take ~0.2 s and the queue views ~0.3 s (bench/README.md, "Dashboard
pages per snapshot"); without this every page load and every live fragment paid them again, for
each browser. Holding the snapshot itself (not its ``id``) means a key can never be reused by a
later object. The lock is held while a value is built: a second request for the same value waits
for the first instead of building it twice (the GIL would run them one after the other anyway).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from gpufleet.live.snapshot import LiveSnapshot

T = TypeVar("T")


class PerSnapshot:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snap: LiveSnapshot | None = None
        self._values: dict[str, Any] = {}
        #: Values built, and values answered from the cache (tests and benchmarks read them).
        self.built = 0
        self.hits = 0

    def get(self, snap: LiveSnapshot, kind: str, build: Callable[[LiveSnapshot], T]) -> T:
        """``build(snap)``, computed at most once for this snapshot and ``kind``."""
        with self._lock:
            if self._snap is not snap:
                self._snap, self._values = snap, {}
            if kind in self._values:
                self.hits += 1
                return self._values[kind]
            value = build(snap)
            self._values[kind] = value
            self.built += 1
            return value
