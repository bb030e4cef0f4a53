"""The discrete-event kernel: a time-ordered queue with stable tie-breaks.

Events at equal times pop by kind (finishes before arrivals, so capacity freed at time t is seen by
a job arriving at t), then by insertion sequence. No wall clock anywhere: time is a float of
simulated seconds.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any


class EventKind(IntEnum):
    FINISH = 0
    EVICT = 1
    ARRIVAL = 2
    CYCLE = 3


@dataclass(order=True, slots=True)
class Event:
    time: float
    kind: EventKind
    seq: int
    payload: Any = field(compare=False, default=None)


class EventQueue:
    def __init__(self) -> None:
        self._heap: list[Event] = []
        self._seq = 0

    def push(self, time: float, kind: EventKind, payload: Any = None) -> None:
        heapq.heappush(self._heap, Event(time, kind, self._seq, payload))
        self._seq += 1

    def pop(self) -> Event:
        return heapq.heappop(self._heap)

    def peek_time(self) -> float | None:
        return self._heap[0].time if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)
