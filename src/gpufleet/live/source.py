"""A live source of truth: the one small interface every world the service runs over implements.

The loop (live/loop.py) is the only caller and the only thread that changes a source. A source
holds what exists (nodes, pending and running jobs) and causes effects; it never decides: each
cycle the loop asks it for a ``CycleInput``, hands that to the engine (live/decide.py) and gives the
``CycleResult`` back to ``apply``. Three worlds fit it: ``virtual`` (the simulator's cluster model on
the wall clock, live/virtual.py), Slurm (slurmrestd or the CLI tools) and Kubernetes.

The two real worlds are read, not run: ``PolledSource`` holds what they share (the read cadence,
whether the last read answered and since when, the world as last read, and the events of what
changed between two reads), so live/slurm.py and live/kubernetes.py only say how to read theirs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, CycleResult, Reservation, RunningJob
from gpufleet.model.fleet import Fabric, Fleet
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy


@dataclass(frozen=True, slots=True)
class LiveEvent:
    """Something that happened in the world, at source time ``t``: submit, start, finish,
    preempt, cancel, hold, release, drain, cordon, uncordon, fail, return."""

    t: float
    kind: str
    job: str | None = None
    node: str | None = None
    detail: str = ""
    #: preempt, requeue: the GPU-seconds of work the eviction lost (since the last checkpoint).
    lost_gpu_s: float = 0.0


@dataclass(frozen=True, slots=True)
class SourceHealth:
    """Whether the source answers. ``since``: wall-clock epoch seconds since when it has been in
    this state (None: since the start); ``last_error``: the last failure, kept after recovery."""

    ok: bool
    detail: str = ""
    since: float | None = None
    last_error: str = ""


@dataclass(frozen=True, slots=True)
class QueueFacts:
    """What a real source says of one of its queues beside the tenancy: where the queue's
    nominal comes from (Slurm: ``GrpTRES`` or ``shares``) and its fair share in the source's own
    terms (Slurm: sshare's effective usage ÷ normalized shares; 1.00 = exactly its share)."""

    nominal_basis: str | None = None
    share: float | None = None


class SourceUnavailable(RuntimeError):
    """The source cannot be reached now (a submission is refused with 503, nothing stored)."""


class SourceRefused(ValueError):
    """The source answered and refused (a bad account, a shape it cannot hold): a 422."""


class Source(Protocol):
    #: "virtual", "slurm", "kubernetes".
    name: str
    #: The reservations the last cycle made (a cycle is due when one's start has come).
    reservations: tuple[Reservation, ...]
    tenancy: Tenancy | None
    #: Nodes out of service for new work, and why ("drain", "cordon", "fail").
    out_of_service: dict[str, str]
    #: Evictions completed, and the GPU-seconds of work they lost.
    preemptions: int
    lost_gpu_s: float

    @property
    def fleet(self) -> Fleet: ...

    @property
    def table(self) -> NodeTable:
        """The live node table (free capacity, schedulable column); read by the loop's thread only."""
        ...

    def pending(self) -> dict[str, Job]:
        """The jobs waiting to run, by id."""
        ...

    def running(self) -> dict[str, RunningJob]:
        """The jobs running now, by id."""
        ...

    def advance(self, now: float) -> list[LiveEvent]:
        """Let the world move to source time ``now``: runs end, evictions complete."""
        ...

    def take_ended(self) -> list[RunningJob]:
        """The runs that ended (``finish`` events of ``advance``) since the last call, each as it
        ran: the engine's incremental cycle continues the last one over them (CycleDelta.ended).
        A source that does not follow its runs one by one answers none, and its finishes ask for
        a full cycle."""
        ...

    def submit(self, job: Job, now: float) -> None: ...

    def withdraw(self, job_id: str, now: float) -> Job | None:
        """Take a job out of the world (cancel, hold): pending or running; the job, or None."""
        ...

    def replace(self, job: Job) -> None:
        """A pending job changed (priority): swap it for the changed copy."""
        ...

    def set_schedulable(self, node: str, ok: bool) -> None:
        """Put a node in or out of service for new work (drain, cordon, uncordon)."""
        ...

    def cycle_input(self, now: float, seed: int) -> CycleInput:
        """What the engine is told at ``now``."""
        ...

    def apply(self, result: CycleResult, now: float) -> list[LiveEvent]:
        """Do what the cycle decided: bind and start, send eviction notices."""
        ...

    def usage(self, now: float) -> dict[str, float]:
        """Decayed GPU-seconds per tenant (what fair share reads)."""
        ...

    def health(self) -> SourceHealth: ...


@dataclass(kw_only=True)
class PolledSource:
    """A world the service reads every ``poll_s`` of wall time and does not run itself (Slurm,
    Kubernetes): ``external``, so submissions and changes go to it from the request's thread.

    A subclass reads its world in ``poll`` and, on a good read, sets ``_inp`` (the engine's input
    as the world stands), ``_fleet``, ``_table``, ``_pending`` and ``_running``, then turns the
    job states it read into events with ``_changes``. A failed read goes through ``_failed``: the
    last world stays, ``health()`` says since when and why, and only the first failure of a run
    of them is an event (``source-down``); the next good read is ``source-up`` (``_answered``).

    Its own fields (``api``, ``poll_s``, ``wall``, ``name``) come first and positionally; the
    state below is keyword-only, so each subclass keeps the constructor it had."""

    if TYPE_CHECKING:
        poll_s: float
        wall: Callable[[], float]
        name: str

    external: bool = True
    tenancy: Tenancy | None = None
    reservations: tuple[Reservation, ...] = ()
    out_of_service: dict[str, str] = field(default_factory=dict)
    preemptions: int = 0
    lost_gpu_s: float = 0.0
    polls: int = 0
    failures: int = 0
    _inp: CycleInput | None = None
    _fleet: Fleet = field(default_factory=lambda: Fleet((), Fabric(), "live"))
    _table: NodeTable | None = None
    _pending: dict[str, Job] = field(default_factory=dict)
    _running: dict[str, RunningJob] = field(default_factory=dict)
    #: job id -> "pending" / "running", as the last good read had it.
    _seen: dict[str, str] = field(default_factory=dict)
    _last_poll: float = float("-inf")
    _ok: bool = False
    _since: float | None = None
    _last_error: str = ""
    _profile: Profile | None = None

    # --- what the loop reads ------------------------------------------------------------------
    @property
    def fleet(self) -> Fleet:
        return self._fleet

    @property
    def table(self) -> NodeTable:
        if self._table is None:
            self._table = NodeTable.from_fleet(self._fleet)
        return self._table

    def pending(self) -> dict[str, Job]:
        return self._pending

    def running(self) -> dict[str, RunningJob]:
        return self._running

    def usage(self, now: float) -> dict[str, float]:
        """The world orders its own queue (Slurm's fair-share priority, Kubernetes' classes):
        nothing is fed to the engine a second time."""
        return {}

    def health(self) -> SourceHealth:
        what = self.label()
        if self._ok:
            return SourceHealth(True, f"{what}: {self.read_summary()}; read every {self.poll_s:g}s",
                                self._since, self._last_error)
        if self.polls == 0 and not self._last_error:
            return SourceHealth(False, f"{what}: not read yet")
        return SourceHealth(False, f"{what} unreachable: {self._last_error}", self._since, self._last_error)

    def label(self) -> str:
        """What is read, in words (health's first words)."""
        return self.name

    def read_summary(self) -> str:
        """What the last good read held, in words."""
        return f"{len(self._fleet.nodes)} nodes, {len(self._pending)} pending, {len(self._running)} running"

    def take_ended(self) -> list[RunningJob]:
        """None: a read shows what ended since the last one, not each run as it ran."""
        return []

    # --- polling ------------------------------------------------------------------------------
    def advance(self, now: float) -> list[LiveEvent]:
        wall = self.wall()
        if wall - self._last_poll < self.poll_s:
            return []
        self._last_poll = wall
        return self.poll(now)

    def poll(self, now: float) -> list[LiveEvent]:
        raise NotImplementedError

    def read_again(self) -> None:
        """Read the world at the next tick (after a change sent to it)."""
        self._last_poll = float("-inf")

    def _failed(self, now: float, error: str) -> list[LiveEvent]:
        self.failures += 1
        self._last_error = error
        if not self._ok and self._since is not None:
            return []
        self._ok, self._since = False, self.wall()
        return [LiveEvent(now, "source-down", detail=error)]

    def _answered(self, now: float, detail: str) -> list[LiveEvent]:
        if self._ok:
            return []
        self._ok, self._since = True, self.wall()
        return [LiveEvent(now, "source-up", detail=detail)]

    def _changes(self, state: dict[str, str], now: float, seen_in: str,
                 started: Callable[[str], LiveEvent], ended: Callable[[str], LiveEvent]) -> list[LiveEvent]:
        """The events between the last read's job states and ``state`` (job id -> "pending" /
        "running"): first seen pending is ``submit``, newly running ``started(id)``, gone
        ``ended(id)`` (in id order)."""
        events: list[LiveEvent] = []
        for jid, st in state.items():
            was = self._seen.get(jid)
            if st == "pending" and was is None:
                events.append(LiveEvent(now, "submit", jid, detail=f"seen in {seen_in}"))
            elif st == "running" and was != "running":
                events.append(started(jid))
        events += [ended(jid) for jid in sorted(self._seen.keys() - state.keys())]
        self._seen = state
        return events

    # --- the engine ---------------------------------------------------------------------------
    def default_profile(self) -> Profile:
        raise NotImplementedError

    def engine_profile(self) -> Profile:
        """The profile the engine runs over this world before a read names one: the subclass's
        ``default_profile``, built once (the snapshot asks for its name at every tick)."""
        if self._profile is None:
            self._profile = self.default_profile()
        return self._profile

    def cycle_input(self, now: float, seed: int) -> CycleInput:
        if self._inp is None:
            return CycleInput(now=now, nodes=self.table.copy(), pending=[], running=[], seed=seed,
                              profile=self.engine_profile())
        return replace(self._inp, nodes=self._inp.nodes.copy(), seed=seed)

    def apply(self, result: CycleResult, now: float) -> list[LiveEvent]:
        """The world starts its jobs itself: keep the engine's reservations (planned nodes and
        blockers for explain), bind nothing."""
        self.reservations = result.reservations
        return []
