"""The live loop: source → snapshot → engine → effects, on a clock.

One thread owns the source; everything else talks to it through ``LiveLoop.post`` (commands
applied at the start of the next tick, in the order posted) and reads the immutable
``LiveSnapshot`` the loop publishes after each tick. So a request handler never waits for a
cycle, and a cycle never sees the world change under it.

Source time runs ``speed`` times the wall clock from ``epoch``: with ``speed=60`` a minute of
simulated work passes every second. A cycle runs after a tick in which something changed (a
submission, a finish, a node), when a reservation's time has come, or every ``idle_cycle_s`` of
source time otherwise (estimates drift as running jobs age).

The loop's own cost is bounded two ways, both measured at 2,000 nodes and 100,000 pending
(bench/README.md, "scale"):

- A cycle's statuses are the engine's lazy ``StatusBoard``, settled once on the loop's thread
  before the snapshot is published (``Settled``): copying them into a dict of 100,000 entries
  cost as much again. (Settled by its first reader instead, the loop was cheaper, but that
  reader, an explain, waited 0.4 s for it: the explain p99.)
- Cycles keep a duty ratio: the next one runs no sooner than ``duty`` × the last one's duration
  after it ended (changes wait and are taken together). With a 0.5 s cycle and ``duty=2`` the loop
  holds the interpreter at most a third of the time, so the web server in the same process keeps
  two thirds of a core while submissions stream in; at 2,000 nodes with 1,000 pending a cycle
  takes 6 ms and the gap (12 ms) is below the tick.

The loop wakes early: ``post`` and ``wake`` (a submission another process stored: service/wake.py)
end the wait between ticks, so a job that fits starts within one cycle of its submission instead
of up to a tick later. Woken again while the duty gap runs, it sleeps to the gap's end, not to
the next tick: the duty ratio still bounds the loop's share of the interpreter.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from queue import Empty, SimpleQueue
from typing import Any

from gpufleet.engine.incremental import CycleDelta, CycleMemo
from gpufleet.engine.status import Status
from gpufleet.engine.types import RunningJob
from gpufleet.live.decide import decide
from gpufleet.live.snapshot import LiveSnapshot, take_snapshot
from gpufleet.live.source import LiveEvent, Source
from gpufleet.model.job import Job

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
    #: The engine's shortcut that answered it (engine/incremental.py), "" for a full cycle.
    reused: str = ""


class Settled(Mapping[str, Status]):
    """A cycle's statuses, settled by the first thread that reads them (under a lock: the
    board's lazy writes must run once); afterwards a plain read-only mapping."""

    __slots__ = ("_board", "_done", "_lock")

    def __init__(self, board: Mapping[Any, Status]) -> None:  # keys: JobId (a str)
        self._board, self._done, self._lock = board, False, threading.Lock()

    def _ready(self) -> Mapping[Any, Status]:
        if not self._done:
            with self._lock:
                if not self._done:
                    len(self._board)  # applies the board's queued writes
                    self._done = True
        return self._board

    def __getitem__(self, job: str) -> Status:
        return self._ready()[job]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ready())

    def __len__(self) -> int:
        return len(self._ready())

    def get(self, job: str, default: Status | None = None) -> Status | None:  # type: ignore[override]
        return self._ready().get(job, default)


@dataclass
class LiveLoop:
    source: Source
    speed: float = 1.0
    epoch: float = 0.0
    tick_s: float = 0.5
    idle_cycle_s: float = 60.0
    #: The next cycle waits at least ``duty`` × the last one's wall time after it ended.
    duty: float = 2.0
    #: A woken tick runs at least this long after the one before.
    wake_gap_s: float = 0.02
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
    statuses: Mapping[str, Status] = field(default_factory=dict)
    _commands: SimpleQueue = field(default_factory=SimpleQueue)
    _wall0: float | None = None
    _last_cycle_at: float = float("-inf")
    #: Something changed since the last cycle (kept while the duty gap defers it).
    _dirty: bool = False
    _next_cycle_wall: float = float("-inf")
    _snapshot: LiveSnapshot | None = None
    #: What changed since the last cycle, for the engine's incremental cycle: the jobs posted as
    #: arrivals, in order, the runs that ended (where the source lists them: ``take_ended``),
    #: and whether anything else happened (a command, an eviction, a finish the source does not
    #: list, a due reservation, time passing for an idle cycle): then the cycle runs in full.
    _arrived: list[Job] = field(default_factory=list)
    _ended: list[RunningJob] = field(default_factory=list)
    _other: bool = False
    #: Run the full cycle beside every one the engine answers from its memo and raise on any
    #: difference (``run_incremental``'s verify mode: the tests turn it on).
    verify: bool = False
    _memo: CycleMemo = field(default_factory=CycleMemo)
    _stop: threading.Event = field(default_factory=threading.Event)
    _wake: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def now(self) -> float:
        """Source time now."""
        if self._wall0 is None:
            self._wall0 = self.clock()
        return self.epoch + (self.clock() - self._wall0) * self.speed

    def anchor(self, clock: Callable[[], float], epoch: float, at: float) -> None:
        """Source time is ``epoch`` when ``clock()`` reads ``at`` (processes sharing one clock)."""
        self.clock, self.epoch, self._wall0 = clock, epoch, at

    def post(self, command: Command, arrival: Job | None = None) -> None:
        """Run ``command`` at the next tick. ``arrival``: the command only submits this job (the
        next cycle may then be answered from the engine's memo); any other command makes the next
        cycle a full one."""
        self._commands.put((command, arrival))
        self._wake.set()

    def wake(self) -> None:
        """End the wait for the next tick (any thread): something changed in the store."""
        self._wake.set()

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
                cmd, arrival = self._commands.get_nowait()
            except Empty:
                break
            happened = cmd(self.source, now)
            events += happened
            if arrival is not None and happened:
                self._arrived.append(arrival)
            elif arrival is None:
                self._other = True
            changed = True
        moved = self.source.advance(now)
        events += moved
        ended = self.source.take_ended()
        self._ended += ended
        if len(ended) != len(moved):   # ended lists finishes only: one event it does not list
            self._other = True         # (an eviction, a node, an unlisted finish) is news it can't tell
        self._dirty = self._dirty or changed or bool(moved)
        # a reservation's time coming makes a cycle due where the loop starts jobs itself; over
        # an external source (Slurm, Kubernetes) nothing changes until its next read shows it
        due = not getattr(self.source, "external", False) \
            and any(r.start <= now for r in self.source.reservations)
        cycled = False
        idle = now - self._last_cycle_at >= self.idle_cycle_s
        if self._ended and not self.source.pending():
            # no cycle runs while no job waits (nothing to decide), and the ends are not kept
            # for the next one: the next cycle is a full one, as the engine's contract asks
            self._ended, self._other = [], True
        if (self._dirty or due or idle) \
                and self.source.pending() and time.monotonic() >= self._next_cycle_wall:
            self._other = self._other or due or idle or not (self._arrived or self._ended)
            events += self._cycle(now)
            cycled = True
        for sink in self.sinks:
            sink(events)
        prev = self._snapshot
        if prev is not None and not (changed or moved or cycled or getattr(self.source, "external", False)):
            # Nothing moved: the last picture with the clock and health brought up to date (a
            # full one copies the 100,000-job maps and the node columns: 30 ms a tick). Not for
            # an external source: a read can change what it holds without an event.
            self._snapshot = replace(prev, now=now, health=self.source.health())
        else:
            self._snapshot = take_snapshot(self.source, now, self.statuses, self.last, self.cycles)
        return events

    def _cycle(self, now: float) -> list[LiveEvent]:
        t0 = time.perf_counter()
        self.cycles += 1
        inp = self.source.cycle_input(now, self.seed + self.cycles)
        t1 = time.perf_counter()
        delta = CycleDelta.unknown() if self._other else CycleDelta(arrived=tuple(self._arrived),
                                                                    ended=tuple(self._ended))
        self._arrived, self._ended, self._other = [], [], False
        result, self._memo = decide(inp, delta, self._memo, verify=self.verify)
        left_out = {jid: left.verdict for left in result.left_out for jid in left.ids()}
        events = self.source.apply(result, now)
        if result.stats.reused:  # statuses for the arrivals only: the others keep theirs
            merged = dict(self.statuses)
            merged.update(result.statuses)
            self.statuses = merged
        elif left_out:  # a cut cycle: the jobs it left out got their class's verdict
            self.statuses = {**result.statuses, **left_out}
        else:
            self.statuses = Settled(result.statuses)
            len(self.statuses)  # settled here, before it is published: no reader waits for it
        self._last_cycle_at = now
        self._dirty = False
        took = time.perf_counter() - t0
        self._next_cycle_wall = time.monotonic() + self.duty * took
        self.last = CycleRecord(now, took, t1 - t0, result.stats.pending, len(result.started),
                                result.stats.reused)
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
            self._wake.clear()
            self.tick()
            ended = time.monotonic()
            next_tick = began + self.tick_s
            self._wake.wait(max(0.0, next_tick - time.monotonic()))
            if self._wake.is_set() and not self._stop.is_set():
                # woken: no sooner than the duty gap's end (the cycle may not run before it),
                # nor before ``duty`` × this tick's own time (at least ``wake_gap_s``) has passed
                # since it ended: a stream of submissions wakes the loop every few ms, and a
                # tick that applied some publishes a new snapshot (30 ms at 100,000 pending)
                gap = max(self.wake_gap_s, self.duty * (ended - began))
                until = min(next_tick, max(ended + gap, self._next_cycle_wall))
                self._stop.wait(max(0.0, until - time.monotonic()))

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
