"""The one state object a simulation's handlers read and change.

The event queue and clock, the cluster, what was recorded, and the driver-side ledgers the engine
reads back each cycle (reservations, estimate accuracy, recent disruptions, its memo).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpufleet.engine.incremental import CycleMemo
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import AdmissionState, CycleInput, PendingJob, Reservation, RunningJob
from gpufleet.model.job import Job
from gpufleet.sim.accuracy import AccuracyTracker
from gpufleet.sim.cluster import SimulatedCluster
from gpufleet.sim.decisions import DecisionLog
from gpufleet.sim.fragmentation import FragmentationSamples
from gpufleet.sim.kernel import EventQueue
from gpufleet.sim.recorder import Recorder
from gpufleet.sim.usage import UsageTracker

if TYPE_CHECKING:
    from gpufleet.sim.fleet_events.failures import FailureState

ProgressFn = Callable[[float], None]
#: Run-time stretch of a placement: (job, node indices of its pods in rank order, table) -> factor ≥ 1.
RuntimeModel = Callable[[Job, Sequence[int], NodeTable], float]


@dataclass
class SimConfig:
    """What a run is asked to do; never changes during the run."""

    profile: Profile
    seed: int = 0
    cycle_interval_s: float = 0.0
    stranded_every_s: float = 300.0
    progress: ProgressFn | None = None
    tenancy: object = None
    usage_tracker: UsageTracker | None = None
    runtime_model: RuntimeModel | None = None
    #: Run the full cycle beside every reused, cut or carried-on one and compare (tests, bench).
    verify_carry: bool = False


@dataclass
class SimState:
    cfg: SimConfig
    cluster: SimulatedCluster
    frag: FragmentationSamples
    q: EventQueue = field(default_factory=EventQueue)
    rec: Recorder = field(default_factory=Recorder)
    t: float = 0.0
    events: int = 0
    cycles: int = 0
    submit_times: dict[str, float] = field(default_factory=dict)
    starts: dict[str, float] = field(default_factory=dict)
    finishes: dict[str, float] = field(default_factory=dict)
    #: Bumped when a run ends early (eviction, failure): stale FINISH/EVICT events of the old run
    #: carry the old generation and are ignored.
    generation: dict[str, int] = field(default_factory=dict)
    preemptions: int = 0
    lost_gpu_s: float = 0.0
    slowdowns: dict[str, float] = field(default_factory=dict)
    estimates: dict[str, float] = field(default_factory=dict)
    reserved_starts: dict[str, float] = field(default_factory=dict)
    reservations: tuple[Reservation, ...] = ()
    #: Admission's state carried between cycles (Kueue's quota reservations and sticky heads).
    admission: AdmissionState = field(default_factory=AdmissionState)
    #: (notice time, GPU-equivalents) of every eviction notice: the disruption budget's ledger.
    disruptions: list[tuple[float, float]] = field(default_factory=list)
    accuracy: AccuracyTracker = field(default_factory=AccuracyTracker)
    #: Times at which a CYCLE event is already queued for a reservation or a periodic preemptor.
    wakeups: set[float] = field(default_factory=set)
    #: A cadence CYCLE event is queued (cycle_interval_s > 0).
    cycle_pending: bool = False
    next_stranded: float = 0.0
    #: Jobs that arrived at this instant (for the idle-cycle skip, sim/step.py).
    arrived_now: list[Job] = field(default_factory=list)
    #: Runs that ended at this instant (``CycleDelta.ended``).
    finished_now: list[RunningJob] = field(default_factory=list)
    #: Cycle opportunities, run or skipped: the engine's seed follows it, so a skipped cycle does
    #: not shift the randomness of the cycles after it.
    cycle_seq: int = 0
    #: Cycle opportunities the engine answered from its memo (engine/incremental.py).
    skipped_cycles: int = 0
    #: The engine's memo of the last cycle, handed back at the next (engine/incremental.py).
    memo: CycleMemo = field(default_factory=CycleMemo)
    #: Something changed at an instant with no cycle since the last cycle (``CycleDelta.gap``).
    gap: bool = False
    #: Cycles the engine carried on from the last backfill scan (policies/backfill_carry.py).
    carried_cycles: int = 0
    #: Why each job waits, reservations and backfills, on change (sim/decisions.py); None = off.
    decisions: DecisionLog | None = field(default_factory=DecisionLog)
    #: Failures, node health and spares (fleet_events/failures.py); None: the fleet never breaks.
    fail: FailureState | None = None

    def gen(self, jid: str) -> int:
        return self.generation.get(jid, 0)

    def is_current(self, jid: str, gen: int) -> bool:
        """True when an event about run ``gen`` of ``jid`` still concerns a running job."""
        return self.gen(jid) == gen and jid in self.cluster.running


def cycle_input(st: SimState, pending: Sequence[PendingJob], seq: int | None = None) -> CycleInput:
    """What the engine is told at this instant, with ``pending`` as its queue (``seq``: the
    cycle's sequence number, which seeds it; the current one by default)."""
    cfg, cluster, t = st.cfg, st.cluster, st.t
    return CycleInput(
        now=t, nodes=cluster.table, pending=pending, profile=cfg.profile, running=cluster.running_view(),
        seed=cfg.seed + (st.cycle_seq if seq is None else seq), tenancy=cfg.tenancy,
        usage=cfg.usage_tracker.snapshot(t) if cfg.usage_tracker is not None else {},
        reservations=st.reservations, estimate_accuracy=st.accuracy.medians(),
        disruptions=tuple(d for d in st.disruptions if d[0] > t - 3600.0),
        admission=st.admission,
        running_columns=cluster.running.columns)
