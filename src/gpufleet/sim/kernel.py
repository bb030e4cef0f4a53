"""The discrete-event kernel: a time-ordered queue with stable tie-breaks, and the instant loop.

Events at equal times pop by kind (finishes before arrivals, so capacity freed at time t is seen by
a job arriving at t), then by insertion sequence. No wall clock anywhere: time is a float of
simulated seconds.

The loop (``run``) is SimPy-like and knows nothing of scheduling: it pops every event of one
instant, hands each to the handler registered for its kind, ORs the handlers' ``Outcome`` flags
together and calls ``after_instant`` once. A new event kind is a new ``EventKind`` value and a new
handler; the loop does not change.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum, IntFlag
from typing import Any, Generic, TypeVar


class EventKind(IntEnum):
    """Kinds in tie-break order at one instant (gaps leave room for kinds between)."""

    FINISH = 0       # a run completes: capacity returns first
    EVICT = 10       # a preemption's grace ran out
    STOP = 11        # a failed gang is torn down after detection (fleet_events/failures.py)
    FAILURE = 12     # a GPU / node component fails (fleet_events/failures.py)
    RECLAIM = 13     # a spot node is taken back after its notice
    UPGRADE = 14     # a driver-upgrade wave starts, a node finishes, a canary's soak ends (fleet_events/)
    HEALTH = 15      # a node moves to its next health state (model/health.py)
    ARRIVAL = 20     # a job is submitted
    CYCLE = 30       # a scheduling cycle is due (cadence, reservation start, defrag period)


class Outcome(IntFlag):
    """What a handler tells the loop: whether the cluster changed, whether a cycle is due now."""

    NOTHING = 0
    CHANGED = 1
    CYCLE_DUE = 2
    #: A job arrived (the queue grew; no capacity moved): a cycle is wanted unless provably idle.
    ARRIVED = 4


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


S = TypeVar("S")
Handler = Callable[[S, Event], Outcome]


@dataclass
class Kernel(Generic[S]):
    """Runs events against a state ``S`` that carries a ``q: EventQueue``, ``t`` and ``events``."""

    handlers: Mapping[EventKind, Handler]
    after_instant: Callable[[S, Outcome], None]

    def run(self, state: Any) -> None:
        q: EventQueue = state.q
        while q:
            t = q.peek_time()
            state.t = t
            outcome = Outcome.NOTHING
            # Handlers may push events at ``t`` itself; they belong to this instant too.
            while q and q.peek_time() == t:
                ev = q.pop()
                state.events += 1
                outcome |= self.handlers[ev.kind](state, ev)
            self.after_instant(state, outcome)
