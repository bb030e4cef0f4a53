"""The cycle's inputs and outputs: what a driver hands the engine and what it gets back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status
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

    @property
    def expected_end(self) -> float:
        """When the scheduler expects the job to end: start + the estimate of the work left.

        A job past its estimate is not killed (Slurm kills at the time limit); the engine extends
        it — ``expected_end_at(now)`` never lies in the past — and recomputes reservations each
        cycle, so an overrun moves the reservations it delays instead of wasting the work done.
        """
        return self.start_time + max(self.job.estimate - self.progress_before, 0.0)

    def expected_end_at(self, now: float) -> float:
        return now if self.evicting else max(self.expected_end, now + 1.0)


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


@dataclass(frozen=True, slots=True)
class CycleStats:
    pending: int = 0
    considered: int = 0
    skipped_by_class: int = 0
    shape_classes: int = 0


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
    #: Phase-to-phase working data (e.g. reservation limits from reserve for backfill).
    scratch: dict[str, Any] = field(default_factory=dict)
    empty_slots_cache: dict[tuple, int] = field(default_factory=dict)
    skipped_by_class: int = 0
    considered: int = 0
    statuses: dict[JobId, Status] = field(default_factory=dict)
