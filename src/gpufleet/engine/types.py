"""The cycle's inputs and outputs: what a driver hands the engine and what it gets back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, TypeVar, cast

import numpy as np

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusBoard
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.shape_key import ShapeKey
from gpufleet.model.tenancy import Tenancy

if TYPE_CHECKING:
    from gpufleet.engine.capacity import CapacityTimeline, Hold
    from gpufleet.engine.profile import Profile
    from gpufleet.engine.running import RunningColumns


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
    #: The victim holds a quota reservation, not pods (``QuotaReservation``): a waiting job whose
    #: reservation is released at once; no work is lost.
    reserved: bool = False


@dataclass(frozen=True, slots=True)
class QuotaReservation:
    """Quota that admission reserved for a pending job in an earlier cycle (Kueue's
    ``QuotaReserved`` condition, ``status.admission``): charged to the job's queue, and not
    re-decided, until the job starts (its pods then hold the quota) or leaves the queue."""

    flavor: str
    #: When admission reserved it (kube-scheduler sees older reservations' pods first).
    since: float = 0.0
    #: (pod set index, flavor) when the job's pod sets landed on different flavors.
    pod_sets: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True, slots=True)
class AdmissionState:
    """What admission carries from one cycle to the next, kept by the driver: the engine reads it
    in ``CycleInput.admission`` and returns the next one in ``CycleResult.admission``. Only
    admitters that model it (policies/kueue/admit.py) read or write it; empty otherwise."""

    #: Pending jobs holding a quota reservation from an earlier cycle.
    reserved: Mapping[JobId, QuotaReservation] = field(default_factory=dict)
    #: Per queue (tenant), the job whose preemptions are pending: first in its queue's order
    #: until it is admitted (Kueue's sticky ClusterQueue head, BestEffortFIFO; KEP-7157).
    sticky: Mapping[str, JobId] = field(default_factory=dict)
    #: Per pending job, the index in its queue's flavor list where its next flavor scan starts
    #: (Kueue's ``LastTriedFlavorIdx`` + 1, kept for one cycle: FlavorFungibilityPreserveScanProgress).
    scan: Mapping[JobId, int] = field(default_factory=dict)
    #: Per admitted workload (running or reserved), the flavor of each resource group without
    #: GPUs of its queue (Kueue's ``status.admission`` flavors per resource): where it is charged.
    group_flavors: Mapping[JobId, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CycleInput:
    now: float
    nodes: NodeTable
    #: The waiting jobs: a list, or the driver's ``PendingQueue`` (engine/queue.py), whose columns
    #: are kept across cycles; the same decisions either way, the queue without O(pending) reads.
    pending: Sequence[PendingJob]
    profile: Profile
    running: Sequence[RunningJob] = ()
    seed: int = 0
    #: Tenant queues, cohorts and quotas (model/tenancy.py); None means no quotas.
    tenancy: Tenancy | None = None
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
    #: Admission's state from the previous cycle (quota reservations, sticky heads).
    admission: AdmissionState = field(default_factory=AdmissionState)
    #: ``running`` as columns the driver keeps across cycles (engine/running.py), or None: the
    #: release schedule is then read from them instead of from every running job's pods. A driver
    #: that hands them promises they describe exactly ``running``.
    running_columns: RunningColumns | None = None


@dataclass(frozen=True, slots=True)
class CycleStats:
    pending: int = 0
    considered: int = 0
    skipped_by_class: int = 0
    #: The rule an incremental cycle answered by (engine/incremental.py); "" for a full cycle.
    reused: str = ""


@dataclass(frozen=True, slots=True)
class LeftOut:
    """One shape class's jobs a cut cycle left out (engine/cut.py), each with ``verdict``: ``keys``
    past ``included``, the queue's own list (read it before the queue changes)."""

    key: tuple
    keys: Sequence[tuple[int, float, JobId]]
    included: int
    verdict: Status

    def ids(self) -> list[JobId]:
        return [k[2] for k in self.keys[self.included:]]


@dataclass(frozen=True, slots=True)
class CycleResult:
    bindings: tuple[PodBinding, ...]
    started: tuple[JobId, ...]
    #: Every waiting job's status; after a cut cycle, the jobs it handed the engine (``left_out``
    #: has the others); after a reused answer, the jobs it judged (engine/incremental.py).
    statuses: Mapping[JobId, Status]
    reservations: tuple[Reservation, ...] = ()
    preemptions: tuple[Preemption, ...] = ()
    stats: CycleStats = field(default_factory=CycleStats)
    #: Admission's state for the next cycle (``CycleInput.admission``).
    admission: AdmissionState = field(default_factory=AdmissionState)
    #: What the backfill scan concluded (``BackfillTrace``); None when no scan ran.
    backfill: BackfillTrace | None = None
    #: Per shape class a cut cycle cut, the verdict of the jobs it left out (engine/cut.py).
    left_out: tuple[LeftOut, ...] = ()


@dataclass(frozen=True, slots=True)
class ScanFailure:
    """One search the backfill scan made that failed: it killed its shape class (and every class
    that dominates it) in its mode and every higher one."""

    key: ShapeKey
    mode: int
    status: Status
    job: Job
    #: For a "fits now, but would delay the reservation" verdict: the job's planned run, since
    #: the verdict's text names its end (now + planned run); None for other verdicts.
    planned: float | None = None


@dataclass(slots=True)
class BackfillTrace:
    """What one backfill scan concluded, as data: enough for a driver to carry the same scan on
    for jobs queued behind every candidate it saw, without scanning those again
    (``policies/backfill_continue.py``; the proof of when that is the same lives with its
    caller, policies/backfill_carry.py).

    The limits are per protected reservation [gpu, cpu, memory] per node: ``limits_initial`` as
    the scan began, ``limits`` after the jobs it started. ``view0`` is the free capacity the scan
    began with (the plan after the place step)."""

    starts: tuple[float, ...]
    first: Reservation | None
    view0: tuple[np.ndarray, np.ndarray, np.ndarray]
    limits_initial: list[list[np.ndarray]]
    limits: list[list[np.ndarray]]
    #: The place step's UNRESOLVABLE verdicts by shape class, applied before the scan (every mode).
    settled: tuple[tuple[ShapeKey, Status], ...]
    failures: list[ScanFailure]
    tests: int
    max_tests: int
    policy: str
    #: How many of ``failures`` were made on ``view0`` and ``limits_initial`` themselves (those
    #: before the scan's first start); -1 while the scan runs and has started nothing.
    anchored: int = -1


@dataclass(frozen=True, slots=True)
class Admission:
    """One pending job as admission saw it, in admission order (admit hands these to preempt)."""

    pending: PendingJob
    admitted: bool
    flavor: str
    reason: str = ""
    #: 0: admitted within its tenant's guarantee; 1: admitted as a borrower (or refused).
    tier: int = 1
    #: Position in the fair-share order admission walked.
    rank: int = 0


@dataclass(frozen=True, slots=True)
class CycleFacts:
    """What the cycle knows, fixed for its whole run: every phase reads it, none writes it."""

    now: float
    profile: Profile
    running: Sequence[RunningJob] = ()
    #: Tenant queues, cohorts and quotas; None means no quotas.
    tenancy: Tenancy | None = None
    usage: Mapping[str, float] = field(default_factory=dict)
    previous_reservations: tuple[Reservation, ...] = ()
    estimate_accuracy: Mapping[str, float] = field(default_factory=dict)
    disruptions: tuple[tuple[float, float], ...] = ()
    admission: AdmissionState = field(default_factory=AdmissionState)
    running_columns: RunningColumns | None = None


def job_estimates(jobs: Sequence[Job]) -> np.ndarray:
    """``Job.estimate`` for every job, as two column reads: the estimate where one is given,
    else the true run time (None reads as NaN in a float array)."""
    n = len(jobs)
    est = np.fromiter(map(attrgetter("run_time_estimate"), jobs), float, n)  # None reads as NaN
    missing = np.isnan(est)
    if missing.any():
        run = np.fromiter(map(attrgetter("run_time"), jobs), float, n)
        est[missing] = run[missing]
    return est


#: A pod request's shape (``PodRequest.shape``): equal shapes are interchangeable for fitting.
Shape = tuple[object, ...]
S = TypeVar("S")


@dataclass(slots=True)
class PlaceCaches:
    """Answers the placer memoises within one cycle; owned (filled and read) by placement, which
    reservation and backfill reach through ``Placer.fit``. Keys name everything an answer depends
    on: the fleet is fixed for the cycle, so answers about the *empty* fleet key on the request
    alone; answers about current capacity also key on the table's free state."""

    #: Pods of (replicas, shape, pods-per-node cap, per-job node filter) an empty fleet holds: the
    #: unresolvable test.
    empty_capacity: dict[tuple[int, Shape, int | None, frozenset[str] | None], int] = field(
        default_factory=dict)
    #: Per-job node filters (``Job.eligible_nodes``) as masks over the cycle's fleet, per node set.
    eligible_masks: dict[frozenset[str], np.ndarray] = field(default_factory=dict)
    #: What one policy alone memoises, by the type it names (``owned``).
    by_policy: dict[type, object] = field(default_factory=dict)

    def owned(self, kind: type[S]) -> S:
        """The cycle's one ``kind()`` (made on first use): a policy's own per-cycle state, whose
        fields the engine does not know (policies/topology.py's ``TopologyCaches``)."""
        state = self.by_policy.get(kind)
        if state is None:
            state = self.by_policy[kind] = kind()
        return cast(S, state)


@dataclass(slots=True)
class ReservationPlan:
    """Reserve → backfill: the capacity timeline reservation searched, and each reservation with
    the hold it puts on that timeline (backfill may not take what a protected hold needs)."""

    timeline: CapacityTimeline
    holds: list[tuple[Reservation, Hold]] = field(default_factory=list)


@dataclass(slots=True)
class Handoffs:
    """Typed hand-offs between phases: each field has one writer (named) and later readers."""

    #: admit → preempt: every pending job's admission verdict, in admission order.
    admissions: list[Admission] = field(default_factory=list)
    #: place → reserve: jobs bound by the place step (they run from ``now``; their ends free room).
    placed_now: list[Job] = field(default_factory=list)
    #: reserve → backfill: None when the reserver made no plan (no blocked job, or no reserver).
    reservation_plan: ReservationPlan | None = None
    #: admit (and preempt, for sticky heads) → the cycle's result: admission's state for the next
    #: cycle; None when the admitter keeps none.
    quota_reserved: dict[JobId, QuotaReservation] | None = None
    sticky: dict[str, JobId] | None = None
    flavor_scan: dict[JobId, int] | None = None
    group_flavors: dict[JobId, tuple[str, ...]] | None = None
    #: place → reserve, backfill: shape classes (``Job.shape_key``) the place step searched and
    #: found UNRESOLVABLE (they fit not even the empty fleet, so neither does any shape that
    #: dominates them), each with that verdict. Later phases settle a job of such a class by this
    #: verdict instead of searching it again.
    unresolvable: dict[ShapeKey, Status] = field(default_factory=dict)


@dataclass(slots=True)
class CycleOutputs:
    """What the cycle reports besides its decisions: why each waiting job waits, and counters."""

    #: Why each job left waiting waits: phases ``record``/``note`` verdicts, merged by one rule.
    statuses: StatusBoard = field(default_factory=StatusBoard)
    considered: int = 0
    skipped_by_class: int = 0
    #: backfill → the cycle's result: what its scan concluded.
    backfill: BackfillTrace | None = None


class CycleContext:
    """Per-cycle state shared by the phases, in four parts with one job each:

    - ``facts``: the frozen inputs (time, profile, running jobs, tenancy, history);
    - ``rng``: the cycle's generator, seeded from ``CycleInput.seed`` (the only randomness), made
      on first use: most profiles draw nothing, and making one costs ~15 µs, a tenth of a small cycle;
    - ``caches``: per-cycle memo tables owned by placement (``PlaceCaches``);
    - ``handoff``: typed hand-offs between phases (``Handoffs``);
    - ``out``: statuses and counters (``CycleOutputs``).

    The inputs are also readable as attributes (``ctx.now``, ``ctx.running``, …), read-only.
    """

    __slots__ = ("facts", "_rng", "caches", "handoff", "out")

    def __init__(self, now: float, profile: Profile, rng: np.random.Generator | int,
                 running: Sequence[RunningJob] = (), tenancy: Tenancy | None = None,
                 usage: Mapping[str, float] | None = None,
                 previous_reservations: tuple[Reservation, ...] = (),
                 estimate_accuracy: Mapping[str, float] | None = None,
                 disruptions: tuple[tuple[float, float], ...] = (),
                 admission: AdmissionState | None = None,
                 running_columns: RunningColumns | None = None) -> None:
        self.facts = CycleFacts(now, profile, running, tenancy, usage if usage is not None else {},
                                previous_reservations,
                                estimate_accuracy if estimate_accuracy is not None else {},
                                disruptions, admission if admission is not None else AdmissionState(),
                                running_columns)
        self._rng = rng
        self.caches = PlaceCaches()
        self.handoff = Handoffs()
        self.out = CycleOutputs()

    @property
    def rng(self) -> np.random.Generator:
        """The cycle's generator (``rng`` as given, or made from it as a seed on first use)."""
        if not isinstance(self._rng, np.random.Generator):
            self._rng = np.random.default_rng(self._rng)
        return self._rng

    @property
    def now(self) -> float:
        return self.facts.now

    @property
    def profile(self) -> Profile:
        return self.facts.profile

    @property
    def running(self) -> Sequence[RunningJob]:
        return self.facts.running

    @property
    def tenancy(self) -> Tenancy | None:
        return self.facts.tenancy

    @property
    def usage(self) -> Mapping[str, float]:
        return self.facts.usage

    @property
    def previous_reservations(self) -> tuple[Reservation, ...]:
        return self.facts.previous_reservations

    @property
    def estimate_accuracy(self) -> Mapping[str, float]:
        return self.facts.estimate_accuracy

    @property
    def disruptions(self) -> tuple[tuple[float, float], ...]:
        return self.facts.disruptions

    @property
    def admission(self) -> AdmissionState:
        return self.facts.admission

    @property
    def statuses(self) -> StatusBoard:
        return self.out.statuses

    def planned_run(self, job: Job) -> float:
        """The run time planning uses: the estimate stretched by the tenant's accuracy record."""
        return job.estimate * max(1.0, self.facts.estimate_accuracy.get(job.tenant, 1.0))

    def expected_ends(self, running: Sequence[RunningJob]) -> np.ndarray:
        """``expected_end`` of every job in ``running``, as one column: the same float
        arithmetic done by numpy (start + max(planned − progress, 0), or now + 1 s when that is
        not in the future); jobs under an eviction notice are computed one by one."""
        n = len(running)
        jobs = list(map(attrgetter("job"), running))
        planned_run = job_estimates(jobs)
        accuracy = self.facts.estimate_accuracy
        if accuracy:
            planned_run = planned_run * np.fromiter(
                (max(1.0, accuracy.get(t, 1.0)) for t in map(attrgetter("tenant"), jobs)), float, n)
        start = np.fromiter(map(attrgetter("start_time"), running), float, n)
        progress = np.fromiter(map(attrgetter("progress_before"), running), float, n)
        planned = start + np.maximum(planned_run - progress, 0.0)
        now = self.facts.now
        ends = np.where(planned > now, planned, now + 1.0)
        evicting = np.fromiter(map(attrgetter("evicting"), running), bool, n)
        for i in np.flatnonzero(evicting).tolist():
            ends[i] = self.expected_end(running[i])
        return ends

    def expected_end(self, rj: RunningJob) -> float:
        """When a running job should end, by the planned run time.

        Never in the past: a job past its estimate is not killed (Slurm kills at the time limit);
        the engine extends it by recomputing every cycle, so an overrun moves the reservations it
        delays instead of wasting the work done. ``now`` for a job being evicted.
        """
        now = self.facts.now
        if rj.evicting:
            return max(now, rj.evict_at) if rj.evict_at is not None else now
        planned = rj.start_time + max(self.planned_run(rj.job) - rj.progress_before, 0.0)
        return planned if planned > now else now + 1.0
