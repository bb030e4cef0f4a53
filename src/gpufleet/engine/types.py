"""The cycle's inputs and outputs: what a driver hands the engine and what it gets back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusBoard
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job

if TYPE_CHECKING:
    from gpufleet.engine.profile import Profile


@dataclass(frozen=True, slots=True)
class PendingJob:
    """A job waiting to run; ``bound`` lists pods already holding capacity (per-pod schedulers)."""

    job: Job
    bound: tuple[PodBinding, ...] = ()


@dataclass(frozen=True, slots=True)
class RunningJob:
    job: Job
    start_time: float
    bindings: tuple[PodBinding, ...]
    #: Work already done before this run began (restarts from a checkpoint), seconds.
    progress_before: float = 0.0
    #: True while a preemption notice runs out its grace period: its capacity is already promised.
    evicting: bool = False
    #: When an evicting job's pods go (notice + grace).
    evict_at: float | None = None
    #: True when this run resumes an evicted job (it pays its restart cost first).
    resumed: bool = False


@dataclass(frozen=True, slots=True)
class Reservation:
    """Future capacity held for a blocked job: these pods on these nodes, from ``start`` on.

    ``protected`` reservations bind backfill (it may not delay them); the others are the
    schedule's estimates only (EASY backfill protects the head job alone).
    """

    job: JobId
    start: float
    nodes: tuple[int, ...]
    bindings: tuple[PodBinding, ...] = ()
    protected: bool = True


@dataclass(frozen=True, slots=True)
class Preemption:
    """Evict the whole gang ``job`` (after ``grace_s``, during which it may checkpoint)."""

    job: JobId
    for_job: JobId
    reason: str
    grace_s: float = 0.0


@dataclass(frozen=True, slots=True)
class CycleInput:
    now: float
    nodes: NodeTable
    pending: Sequence[PendingJob]
    profile: Profile
    running: Sequence[RunningJob] = ()
    seed: int = 0
    #: Tenant queues, cohorts and quotas (model/tenancy.py); None means no quotas.
    tenancy: Any = None
    #: Decayed historical usage per tenant (GPU-seconds), kept by the driver for fair share.
    usage: Mapping[str, float] = field(default_factory=dict)
    #: Reservations from the previous cycle, so a reservation sticks to its nodes across cycles.
    reservations: tuple[Reservation, ...] = ()
    #: Per tenant, the driver's record of actual / estimated run time (median of recent jobs).
    #: Planning stretches a tenant's estimates by it (never shortens them): the predictor from the
    #: tenant's history, and what takes the gain out of under-stating run times to win backfill.
    estimate_accuracy: Mapping[str, float] = field(default_factory=dict)
    #: Evictions the driver applied recently, (notice time, GPU-equivalents), oldest first:
    #: what a disruption budget (policies/defrag.py) counts against.
    disruptions: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True, slots=True)
class CycleStats:
    pending: int = 0
    considered: int = 0
    skipped_by_class: int = 0


@dataclass(frozen=True, slots=True)
class CycleResult:
    bindings: tuple[PodBinding, ...]
    started: tuple[JobId, ...]
    statuses: Mapping[JobId, Status]
    reservations: tuple[Reservation, ...] = ()
    preemptions: tuple[Preemption, ...] = ()
    stats: CycleStats = field(default_factory=CycleStats)


@dataclass(slots=True)
class CycleContext:
    """Per-cycle state shared by the phases: time, the profile, a seeded generator, caches."""

    now: float
    profile: Profile
    rng: np.random.Generator
    running: Sequence[RunningJob] = ()
    tenancy: Any = None
    usage: Mapping[str, float] = field(default_factory=dict)
    previous_reservations: tuple[Reservation, ...] = ()
    estimate_accuracy: Mapping[str, float] = field(default_factory=dict)
    disruptions: tuple[tuple[float, float], ...] = ()

    def planned_run(self, job: Job) -> float:
        """The run time planning uses: the estimate stretched by the tenant's accuracy record."""
        return job.estimate * max(1.0, self.estimate_accuracy.get(job.tenant, 1.0))

    def expected_end(self, rj: RunningJob) -> float:
        """When a running job should end, by the planned run time.

        Never in the past: a job past its estimate is not killed (Slurm kills at the time limit);
        the engine extends it by recomputing every cycle, so an overrun moves the reservations it
        delays instead of wasting the work done. ``now`` for a job being evicted.
        """
        if rj.evicting:
            return max(self.now, rj.evict_at) if rj.evict_at is not None else self.now
        planned = rj.start_time + max(self.planned_run(rj.job) - rj.progress_before, 0.0)
        return planned if planned > self.now else self.now + 1.0

    #: Jobs bound by the place step of this cycle (they run from ``now``; reservation counts them).
    placed_now: list[Job] = field(default_factory=list)
    #: Phase-to-phase working data (e.g. reservation limits from reserve for backfill).
    scratch: dict[str, Any] = field(default_factory=dict)
    empty_slots_cache: dict[tuple, int] = field(default_factory=dict)
    skipped_by_class: int = 0
    considered: int = 0
    #: Why each job left waiting waits: phases ``record``/``note`` verdicts, merged by one rule.
    statuses: StatusBoard = field(default_factory=StatusBoard)
