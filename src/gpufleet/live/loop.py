"""The live loop: source → snapshot → engine → effects, on a clock.

One thread owns the source; everything else talks to it through ``LiveLoop.post`` (commands
applied at the start of the next tick, in the order posted) and reads the immutable
``LiveSnapshot`` the loop publishes after each tick. So a request handler never waits for a
cycle, and a cycle never sees the world change under it.

Source time runs ``speed`` times the wall clock from ``epoch``: with ``speed=60`` a minute of
simulated work passes every second. A cycle runs after a tick in which something changed (a
submission, a finish, a node), when a reservation's time has come, or every ``idle_cycle_s`` of
source time otherwise (estimates drift as running jobs age).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from queue import Empty, SimpleQueue

from gpufleet.engine.status import Status
from gpufleet.live.decide import decide
from gpufleet.live.snapshot import LiveSnapshot, take_snapshot
from gpufleet.live.source import LiveEvent, Source

#: A command runs on the loop's thread with the source and source time; it returns what happened.
Command = Callable[[Source, float], list[LiveEvent]]
EventSink = Callable[[list[LiveEvent]], None]


@dataclass
class CycleRecord:
    """What the last cycle took and did (the loop's own cost, kept measured)."""

    at: float = 0.0
    duration_s: float = 0.0
    build_s: float = 0.0
    pending: int = 0
    started: int = 0


@dataclass
class LiveLoop:
    source: Source
    speed: float = 1.0
    epoch: float = 0.0
    tick_s: float = 0.5
    idle_cycle_s: float = 60.0
    seed: int = 0
    clock: Callable[[], float] = time.monotonic
    #: Called on the loop's thread with each tick's events (the store records them).
    sinks: list[EventSink] = field(default_factory=list)
    #: Called on the loop's thread before each tick (a generated load posts its arrivals).
    before_tick: list[Callable[[], object]] = field(default_factory=list)
    #: Called with each cycle's duration in seconds (metrics).
    cycle_observers: list[Callable[[float], None]] = field(default_factory=list)
    cycles: int = 0
    last: CycleRecord = field(default_factory=CycleRecord)
    statuses: dict[str, Status] = field(default_factory=dict)
    _commands: SimpleQueue = field(default_factory=SimpleQueue)
    _wall0: float | None = None
    _last_cycle_at: float = float("-inf")
    _snapshot: LiveSnapshot | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def now(self) -> float:
        """Source time now."""
        if self._wall0 is None:
            self._wall0 = self.clock()
        return self.epoch + (self.clock() - self._wall0) * self.speed

    def post(self, command: Command) -> None:
        self._commands.put(command)

    def snapshot(self) -> LiveSnapshot:
        """The state published by the last tick (built on first use before the loop runs)."""
        snap = self._snapshot
        if snap is None:
            snap = self._snapshot = take_snapshot(self.source, self.now(), self.statuses, self.last,
                                                  self.cycles)
        return snap

    def tick(self) -> list[LiveEvent]:
        """One turn: apply posted commands, let the world move, decide if due, publish."""
        for hook in self.before_tick:
            hook()
        now = self.now()
        events: list[LiveEvent] = []
        changed = False
        while True:
            try:
                cmd = self._commands.get_nowait()
            except Empty:
                break
            events += cmd(self.source, now)
            changed = True
        moved = self.source.advance(now)
        events += moved
        # a reservation's time coming makes a cycle due where the loop starts jobs itself; over
        # an external source (Slurm, Kubernetes) nothing changes until its next read shows it
        due = not getattr(self.source, "external", False) \
            and any(r.start <= now for r in self.source.reservations)
        if (changed or moved or due or now - self._last_cycle_at >= self.idle_cycle_s) \
                and self.source.pending():
            events += self._cycle(now)
        for sink in self.sinks:
            sink(events)
        self._snapshot = take_snapshot(self.source, now, self.statuses, self.last, self.cycles)
        return events

    def _cycle(self, now: float) -> list[LiveEvent]:
        t0 = time.perf_counter()
        self.cycles += 1
        inp = self.source.cycle_input(now, self.seed + self.cycles)
        t1 = time.perf_counter()
        result = decide(inp)
        events = self.source.apply(result, now)
        self.statuses = {str(j): s for j, s in result.statuses.items()}
        self._last_cycle_at = now
        took = time.perf_counter() - t0
        self.last = CycleRecord(now, took, t1 - t0, result.stats.pending, len(result.started))
        for obs in self.cycle_observers:
            obs(took)
        return events

    def start(self) -> None:
        """Run ticks on a thread until ``stop``."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="gpufleet-live-loop", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self.tick()
            self._stop.wait(max(0.0, self.tick_s - (time.monotonic() - began)))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
