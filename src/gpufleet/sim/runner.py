"""simulate(): build the state, run the kernel with one handler per event kind, collect the result.

The loop itself lives in sim/kernel.py; what happens at each kind of event in sim/handlers.py;
the engine cycle after each instant and the application of its decisions in sim/step.py.
"""

from __future__ import annotations

import gc
import time as wallclock
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from gpufleet.engine.profile import Profile
from gpufleet.model.fleet import Fleet
from gpufleet.model.job import Job
from gpufleet.sim.cluster import SimulatedCluster
from gpufleet.sim.fleet_events.failure_events import install
from gpufleet.sim.fleet_events.failure_handlers import FAILURE_HANDLERS
from gpufleet.sim.fleet_events.failures import FailureConfig, FailureLedger
from gpufleet.sim.fleet_events.upgrade_compat import close_all
from gpufleet.sim.fragmentation import FragmentationSamples
from gpufleet.sim.handlers import HANDLERS
from gpufleet.sim.kernel import EventKind, Kernel
from gpufleet.sim.recorder import Recorder
from gpufleet.sim.state import ProgressFn, RuntimeModel, SimConfig, SimState
from gpufleet.sim.step import after_instant, stranded_gpus
from gpufleet.sim.usage import UsageTracker

__all__ = ["ProgressFn", "RuntimeModel", "SimResult", "simulate", "stranded_gpus"]

@dataclass
class SimResult:
    policy: str
    fleet_gpus: int
    jobs: dict[str, Job]
    starts: dict[str, float]
    finishes: dict[str, float]
    recorder: Recorder
    horizon: float
    end_time: float
    deadlocked: bool
    deadlock_detail: str
    held_by_partial_gangs: int
    cycles: int
    events: int
    wall_s: float
    preemptions: int = 0
    lost_gpu_s: float = 0.0
    #: Per-job placement slowdown (run time stretch) of each start, when a runtime model is used.
    slowdowns: dict[str, float] | None = None
    #: First estimated start the engine gave each job, for the estimate-error report.
    estimates: dict[str, float] | None = None
    #: Start time of the first protected reservation each job held (the no-delay promise).
    reserved_starts: dict[str, float] | None = None
    #: Per-tenant GPU-seconds actually run, and the usage tracker's view (for tenancy metrics).
    extra: dict | None = None
    #: Fragmentation ratio and per-shape schedulability samples, and the moves (sim/fragmentation.py).
    fragmentation: FragmentationSamples | None = None
    #: Interruptions, recoveries, spares and GPU-time lost by cause, when failures were on.
    failures: FailureLedger | None = None
    #: EASY cycles carried on from the last one instead of run (policies/backfill_carry.py).
    carried_cycles: int = 0



def simulate(fleet: Fleet, jobs: Sequence[Job], profile: Profile, *, seed: int = 0,
             horizon: float | None = None, cycle_interval_s: float = 0.0,
             stranded_every_s: float = 300.0, progress: ProgressFn | None = None,
             tenancy: object = None, usage_tracker: UsageTracker | None = None,
             runtime_model: RuntimeModel | None = None, decision_log: bool = True,
             failures: FailureConfig | None = None, failures_until: float | None = None,
             verify_carried_cycles: bool = False) -> SimResult:
    """Run ``jobs`` on ``fleet`` under ``profile``. ``decision_log`` adds wait/reserve/backfill
    events (sim/decisions.py) to the event log; off, the log holds what happened only.
    ``failures`` breaks nodes (fleet_events/failures.py) until ``failures_until`` (default: the horizon).
    ``verify_carried_cycles`` runs the full cycle beside every carried-on EASY cycle and fails
    loudly if they differ (engine/incremental.py, verify mode; for tests and benchmarks)."""
    started_wall = wallclock.perf_counter()
    cfg = SimConfig(profile=profile, seed=seed, cycle_interval_s=cycle_interval_s,
                    stranded_every_s=stranded_every_s, progress=progress, tenancy=tenancy,
                    usage_tracker=usage_tracker, runtime_model=runtime_model)
    cfg.verify_carry = verify_carried_cycles
    st = SimState(cfg=cfg, cluster=SimulatedCluster(fleet), frag=FragmentationSamples.for_workload(jobs))
    if not decision_log:
        st.decisions = None
    st.submit_times = {j.id: j.submit_time for j in jobs}
    for job in sorted(jobs, key=lambda j: (j.submit_time, j.id)):
        st.q.push(job.submit_time, EventKind.ARRIVAL, job)
    horizon = horizon if horizon is not None else max((j.submit_time for j in jobs), default=0.0)
    handlers = HANDLERS
    if failures is not None:
        install(st, failures, failures_until if failures_until is not None else horizon)
        handlers = {**HANDLERS, **FAILURE_HANDLERS}
    with batch_gc():
        Kernel(handlers, after_instant).run(st)
    return result_of(st, fleet, jobs, horizon, wallclock.perf_counter() - started_wall)


#: Collector thresholds while a simulation runs (CPython's defaults: 700, 10, 10).
_GC_THRESHOLDS = (20_000, 20, 20)


@contextmanager
def batch_gc() -> Iterator[None]:
    """Python's cyclic collector tuned for one long batch run, and put back afterwards.

    A large run holds ~1M long-lived objects (100,000 jobs, their pods, the event heap); with the
    default thresholds a full collection walks all of them every few dozen cycles, which measured
    ~10–20% of a congested gang-easy cycle (bench/README.md, "simulate: the running set as
    columns"). What exists when the run starts (jobs, fleet) is frozen out of collection
    (``gc.freeze``) and collections run less often. Reference counting still frees everything
    acyclic at once; the run's peak memory was unchanged. No effect on results."""
    old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


def result_of(st: SimState, fleet: Fleet, jobs: Sequence[Job], horizon: float, wall_s: float) -> SimResult:
    cluster = st.cluster
    held = cluster.held_by_partial_gangs
    deadlocked = bool(cluster.pending) and not cluster.running and held > 0
    detail = ""
    if deadlocked:
        partial = sorted(cluster.partial)
        detail = (f"{held} GPUs held by {len(partial)} partially placed gang(s) "
                  f"({', '.join(partial[:6])}{'…' if len(partial) > 6 else ''}); nothing running, "
                  f"nothing can start")
    end = st.t
    if st.fail is not None:
        # node repairs go on after the last job; the run, for its metrics, ends with the jobs
        end = max([horizon, *st.finishes.values(), *st.starts.values(), *st.submit_times.values()])
        if st.fail.upgrade is not None:  # jobs still held back by the driver matrix wait until the end
            close_all(st.fail.upgrade, end, st.cluster.pending)
    return SimResult(
        policy=st.cfg.profile.name, fleet_gpus=fleet.total_gpus, jobs={j.id: j for j in jobs},
        starts=st.starts, finishes=st.finishes, recorder=st.rec, horizon=horizon, end_time=end,
        deadlocked=deadlocked, deadlock_detail=detail, held_by_partial_gangs=held,
        cycles=st.cycles, events=st.events, wall_s=wall_s, carried_cycles=st.carried_cycles,
        preemptions=st.preemptions, lost_gpu_s=st.lost_gpu_s,
        slowdowns=st.slowdowns if st.cfg.runtime_model is not None else None, estimates=st.estimates,
        reserved_starts=st.reserved_starts, fragmentation=st.frag,
        extra={"usage": st.cfg.usage_tracker} if st.cfg.usage_tracker is not None else None,
        failures=st.fail.ledger if st.fail is not None else None,
    )
