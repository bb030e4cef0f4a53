"""What a page derives from the live world, computed once per published snapshot.

The loop publishes a new immutable ``LiveSnapshot`` after each tick and never changes one, so the
snapshot object is its own version: a value built from it stays right for as long as it is the
published one. At 100,000 pending jobs the Overview's figures (pending by reason, stranded GPUs,
the biggest waiting gang) take ~0.2 s and the queue views ~0.4 s (bench/README.md, "Dashboard
pages per snapshot"); without this every page load and every live fragment paid them again, for
each browser.

A value that does not read the clock or the source's health (the queue views; the Overview's
counts, present.overview_facts) is keyed by the snapshot's contents instead (``by_content``):
when nothing moved, the loop publishes the last picture with only its time and health brought
up to date (live/loop.py), and such a value is still right. The key holds the objects
themselves (not their ``id``), so it can never match a later object that happens to reuse an
address. The lock is held while a value is built (a build must not ask the cache again): a
second request for it waits for the first instead of building it twice (the GIL would run
them one after the other anyway).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

from gpufleet.live.snapshot import LiveSnapshot

T = TypeVar("T")


def _contents(snap: LiveSnapshot) -> tuple[object, ...]:
    """Everything a snapshot holds but its time and the source's health: objects compared by
    identity, the counters (a tuple, compared by value) last."""
    return (snap.pending, snap.running, snap.statuses, snap.table, snap.tenancy, snap.usage, snap.extra,
            snap.fleet, snap.out_of_service, snap.reservations, snap.last_cycle,
            (snap.source, snap.cycles, snap.preemptions, snap.lost_gpu_s))


def _same(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    return len(a) == len(b) and all(x is y or (isinstance(x, tuple) and x == y)
                                    for x, y in zip(a, b, strict=True))


class PerSnapshot:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[tuple[object, ...], Any]] = {}
        #: Per kind: values built, and values answered from the cache (tests and benchmarks).
        self.built: Counter[str] = Counter()
        self.hits: Counter[str] = Counter()

    def get(self, snap: LiveSnapshot, kind: str, build: Callable[[LiveSnapshot], T],
            by_content: bool = False) -> T:
        """``build(snap)``, computed at most once for this snapshot (or, ``by_content``, for
        these contents) and ``kind``."""
        key = _contents(snap) if by_content else (snap,)
        with self._lock:
            entry = self._entries.get(kind)
            if entry is not None and _same(entry[0], key):
                self.hits[kind] += 1
                return entry[1]
            value = build(snap)
            self._entries[kind] = (key, value)
            self.built[kind] += 1
            return value
