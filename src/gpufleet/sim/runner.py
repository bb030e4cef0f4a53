"""The simulation loop: pop the events of one instant, run one engine cycle, apply its decisions.

The driver owns time and effects; the engine only decides. Cycles run after every instant at which
something changed (an arrival or a finish), or on a fixed cadence when ``cycle_interval_s`` > 0, as
a live scheduler would.
"""

from __future__ import annotations

import math
import time as wallclock
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gpufleet.engine.checkpoints import eviction_cost, remaining_run_s
from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput
from gpufleet.model.fleet import Fleet
from gpufleet.model.job import Job
from gpufleet.model.mig import MIG_RECONFIGURE_S
from gpufleet.sim.accuracy import AccuracyTracker
from gpufleet.sim.cluster import SimulatedCluster
from gpufleet.sim.fragmentation import FragmentationSamples
from gpufleet.sim.kernel import EventKind, EventQueue
from gpufleet.sim.recorder import Recorder
from gpufleet.sim.usage import UsageTracker

ProgressFn = Callable[[float], None]
#: Run-time stretch of a placement: (job, node indices of its pods in rank order, table) -> factor ≥ 1.
RuntimeModel = Callable[[Job, Sequence[int], NodeTable], float]


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


def stranded_gpus(table: NodeTable, pending: Sequence[Job]) -> int:
    """Free GPUs on nodes where no pending pod fits (wrong shape, model, or CPU/memory exhausted).

    With nothing pending, free GPUs are idle, not stranded: 0.
    """
    if not pending:
        return 0
    usable = np.zeros(len(table), bool)
    seen: set[tuple] = set()
    for job in pending:
        for ps in job.pod_sets:
            if ps.request.shape in seen:
                continue
            seen.add(ps.request.shape)
            usable |= table.slots(ps.request) > 0
    return int(table.gpu_free[~usable].sum())


def simulate(fleet: Fleet, jobs: Sequence[Job], profile: Profile, *, seed: int = 0,
             horizon: float | None = None, cycle_interval_s: float = 0.0,
             stranded_every_s: float = 300.0, progress: ProgressFn | None = None,
             tenancy: object = None, usage_tracker: UsageTracker | None = None,
             runtime_model: RuntimeModel | None = None) -> SimResult:
    started_wall = wallclock.perf_counter()
    q = EventQueue()
    for job in sorted(jobs, key=lambda j: (j.submit_time, j.id)):
        q.push(job.submit_time, EventKind.ARRIVAL, job)
    horizon = horizon if horizon is not None else max((j.submit_time for j in jobs), default=0.0)
    cluster = SimulatedCluster(fleet)
    rec = Recorder()
    starts: dict[str, float] = {}
    finishes: dict[str, float] = {}
    cycles = events = 0
    generation: dict[str, int] = {}
    preemptions = 0
    lost_gpu_s = 0.0
    slowdowns: dict[str, float] = {}
    estimates: dict[str, float] = {}
    reserved_starts: dict[str, float] = {}
    reservations: tuple = ()
    frag = FragmentationSamples.for_workload(jobs)
    #: (notice time, GPU-equivalents) of every eviction notice: the disruption budget's ledger.
    disruptions: list[tuple[float, float]] = []
    accuracy = AccuracyTracker()
    wakeups: set[float] = set()
    cycle_pending = False
    next_stranded = 0.0
    t = 0.0
    while q:
        t = q.peek_time()  # type: ignore[assignment]
        changed = False
        run_now = False
        while q and q.peek_time() == t:
            ev = q.pop()
            events += 1
            if ev.kind is EventKind.ARRIVAL:
                cluster.submit(ev.payload)
                rec.event(t, "submit", ev.payload.id)
                changed = True
            elif ev.kind is EventKind.FINISH:
                jid, gen = ev.payload
                if generation.get(jid, 0) != gen or jid not in cluster.running:
                    continue
                rj = cluster.finish(jid)
                if usage_tracker is not None:
                    usage_tracker.add(rj.job.tenant, rj.job.total_gpus * (t - rj.start_time), t)
                finishes[jid] = t
                accuracy.finished(rj.job)
                rec.event(t, "finish", jid)
                changed = True
            elif ev.kind is EventKind.EVICT:
                jid, gen, notice, grace = ev.payload
                if generation.get(jid, 0) != gen or jid not in cluster.running:
                    continue
                rj = cluster.running[jid]
                cost = eviction_cost(rj, notice, grace)
                if usage_tracker is not None:
                    usage_tracker.add(rj.job.tenant, rj.job.total_gpus * (t - rj.start_time), t)
                cluster.evict(jid, cost.saved_s)
                generation[jid] = generation.get(jid, 0) + 1
                preemptions += 1
                lost_gpu_s += cost.lost_gpu_s
                frag.evicted(rj.job, cost.lost_s, cost.restart_s)
                rec.event(t, "preempt", jid, f"lost {cost.lost_s:.0f}s of work; saved {cost.saved_s:.0f}s")
                changed = True
            else:
                cycle_pending = False
                run_now = True
        if changed and cycle_interval_s > 0 and not cycle_pending:
            q.push(math.ceil(t / cycle_interval_s) * cycle_interval_s, EventKind.CYCLE)
            cycle_pending = True
        if (run_now or (changed and cycle_interval_s <= 0)) and cluster.pending:
            cycles += 1
            result = run_cycle(CycleInput(
                now=t, nodes=cluster.table, pending=cluster.pending_view(), profile=profile,
                running=cluster.running_view(), seed=seed + cycles, tenancy=tenancy,
                usage=usage_tracker.snapshot(t) if usage_tracker is not None else {},
                reservations=reservations, estimate_accuracy=accuracy.medians(),
                disruptions=tuple(d for d in disruptions if d[0] > t - 3600.0)))
            reservations = result.reservations
            wake = min((r.start for r in reservations if r.start > t), default=None)
            if wake is not None and wake not in wakeups:
                # Nothing else may happen at a reservation's time (it can fall where another
                # reservation ends): make sure a cycle runs then.
                wakeups.add(wake)
                q.push(wake, EventKind.CYCLE)
            period = getattr(profile.preemptor, "period_s", 0.0)
            if period > 0 and cluster.running and t + period not in wakeups:
                # A periodic preemptor (defrag) looks again after its period even if nothing
                # changes; bounded: only while jobs run (each of which ends).
                wakeups.add(t + period)
                q.push(t + period, EventKind.CYCLE)
            for res in reservations:
                if res.protected:
                    reserved_starts.setdefault(res.job, res.start)
            for p in result.preemptions:
                if p.job in cluster.running and not cluster.running[p.job].evicting:
                    cluster.mark_evicting(p.job, t + p.grace_s)
                    q.push(t + p.grace_s, EventKind.EVICT, (p.job, generation.get(p.job, 0), t, p.grace_s))
                    rec.event(t, "preempt-notice", p.job, f"for {p.for_job}: {p.reason}")
                    disruptions.append((t, cluster.running[p.job].job.total_gpu_equivalents))
                    frag.moved(t, cluster.running[p.job].job, p.for_job)
            started_now = set(result.started)
            for res in result.reservations:  # the schedule's start estimates (Status.estimated_start)
                if res.job not in started_now:
                    estimates.setdefault(res.job, res.start)
            for b in result.bindings:
                cluster.bind(b)
                if not profile.gang:
                    rec.event(t, "bind", b.job, f"{b.pod_set}/{b.replica}@{cluster.table.names[b.node]}")
            for jid in result.started:
                rj = cluster.start(jid, t)
                starts.setdefault(jid, t)
                nodes = sorted({cluster.table.names[b.node] for b in rj.bindings})
                rec.event(t, "start", jid, ",".join(nodes))
                duration = remaining_run_s(rj)
                if any(b.slot is not None and b.slot.reconfigure for b in rj.bindings):
                    duration += MIG_RECONFIGURE_S  # the GPU's MIG layout changes before it runs
                if runtime_model is not None:
                    factor = runtime_model(rj.job, [b.node for b in rj.bindings], cluster.table)
                    slowdowns[jid] = factor
                    duration *= factor
                q.push(t + duration, EventKind.FINISH, (jid, generation.get(jid, 0)))
        rec.sample(t, cluster.table.gpus_allocated, cluster.busy_gpus, len(cluster.pending))
        if t >= next_stranded:
            rec.sample_stranded(t, stranded_gpus(cluster.table, list(cluster.pending.values())))
            frag.sample(t, cluster.table)
            next_stranded = t + stranded_every_s
        if progress is not None:
            progress(t)
    held = cluster.held_by_partial_gangs
    deadlocked = bool(cluster.pending) and not cluster.running and held > 0
    detail = ""
    if deadlocked:
        partial = sorted(cluster.partial)
        detail = (f"{held} GPUs held by {len(partial)} partially placed gang(s) "
                  f"({', '.join(partial[:6])}{'…' if len(partial) > 6 else ''}); nothing running, "
                  f"nothing can start")
    return SimResult(
        policy=profile.name, fleet_gpus=fleet.total_gpus, jobs={j.id: j for j in jobs},
        starts=starts, finishes=finishes, recorder=rec, horizon=horizon, end_time=t,
        deadlocked=deadlocked, deadlock_detail=detail, held_by_partial_gangs=held,
        cycles=cycles, events=events, wall_s=wallclock.perf_counter() - started_wall,
        preemptions=preemptions, lost_gpu_s=lost_gpu_s,
        slowdowns=slowdowns if runtime_model is not None else None, estimates=estimates,
        reserved_starts=reserved_starts, fragmentation=frag,
        extra={"usage": usage_tracker} if usage_tracker is not None else None,
    )
