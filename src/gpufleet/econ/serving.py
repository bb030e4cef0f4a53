"""The inference floor and borrowing, simulated on the Alibaba 2025 serving trace.

One pool of P GPUs serves the trace's GPU instances (role HN, one GPU each). Three designs:

* **dedicated**: training never touches the pool (floor F = P);
* **fully shared**: training borrows every idle GPU (F = 0);
* **floor-plus-borrow**: the serving tenant's nominal quota is the whole pool and its
  ``lending_limit`` is P − F, so idle GPUs up to the floor F stay idle for serving while training
  borrows the rest (the Kueue mapping of reference §2.1).

Training jobs (gangs of whole GPUs that checkpoint) borrow through the engine's quota admitter,
and when a serving instance arrives and finds no free GPU, the engine's tenancy preemption
reclaims borrowed GPUs (``tenancy`` profile: reclaim within the cohort, checkpoint-aware
victims, a notice of ``grace_s``). The simulator is run through its public ``simulate``.

A new replica is ready after detect + wait in the simulator (which includes the borrower's
notice: the grace, stretched to cover its checkpoint write) + eviction (when it had to wait) +
model load; it breaches the SLO when that exceeds ``slo_s``. The analytic rule it checks: idle
headroom must satisfy H ≥ r·T_r for a ramp of r GPUs/s and a reclaim time
T_r = detect + max(grace, checkpoint) + eviction + model load (reference §2.2's chain: detect,
stop the borrower, free the GPU, start the replica) — the simulated ready time of a replica that
had to reclaim, link for link.

The trace's instances alive through the whole window are a constant base: they occupy the same
GPUs in every design, so the simulation carries only the instances that start or stop in the
window (the dynamic part) and reports the base beside it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpufleet.econ.demand import alibaba_serving_intervals, time_weighted_quantile
from gpufleet.model.errors import InputError
from gpufleet.model.fleet import NodeGroup, build_fleet
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Checkpointing, Job, JobKind, PodRequest, PodSet
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate

SERVING = TenantId("serving")
TRAINING = TenantId("training")


@dataclass(frozen=True)
class ServingSetup:
    gpu: str
    gpus_per_node: int
    days: float
    start_day: float
    headroom_nodes: int
    grace_s: float
    eviction_s: float
    detect_s: float
    model_load_s: float
    slo_s: float
    breach_target: float
    checkpoint_s: float
    checkpoint_interval_s: float
    training_restart_s: float
    training_gpus: int
    training_hours: float
    floor_steps: int


@dataclass
class Workload:
    serving: list[Job]
    base_gpus: int
    window_s: float
    pool_gpus: int
    demand_t: np.ndarray  # step function of dynamic serving GPUs
    demand_v: np.ndarray


def serving_workload(trace: Path, s: ServingSetup) -> Workload:
    starts, ends = alibaba_serving_intervals(trace)
    w0, w1 = s.start_day * 86400.0, (s.start_day + s.days) * 86400.0
    live = (ends > w0) & (starts < w1)
    always = live & (starts <= w0) & (ends >= w1)
    dyn = live & ~always
    jobs = []
    for i in np.flatnonzero(dyn):
        st, en = max(starts[i], w0) - w0, min(ends[i], w1) - w0
        if en <= st:
            continue
        jobs.append(replica(f"srv-{i}", float(st), float(en - st), s.gpu))
    return make_workload(jobs, int(always.sum()), w1 - w0, s)


def make_workload(jobs: list[Job], base_gpus: int, window_s: float, s: ServingSetup) -> Workload:
    """The pool for these serving replicas: their peak in whole nodes plus ``headroom_nodes``."""
    deltas: dict[float, int] = {}
    for j in jobs:
        deltas[j.submit_time] = deltas.get(j.submit_time, 0) + j.total_gpus
        end = j.submit_time + j.run_time
        deltas[end] = deltas.get(end, 0) - j.total_gpus
    t = np.array(sorted(deltas))
    v = np.cumsum([deltas[x] for x in t])
    peak = int(v.max()) if len(v) else 0
    pool = (math.ceil(peak / s.gpus_per_node) + s.headroom_nodes) * s.gpus_per_node
    return Workload(jobs, base_gpus, window_s, pool, t, v)


def replica(jid: str, submit: float, run: float, gpu: str) -> Job:
    return Job(JobId(jid), SERVING, (PodSet("replica", 1, PodRequest(1, gpu_models=(gpu,))),),
               submit_time=submit, run_time=run, priority=100, kind=JobKind.INFERENCE)


def training_jobs(spare_gpus: float, window_s: float, s: ServingSetup) -> list[Job]:
    """Hourly waves of training gangs: 1.2 × the work the pool's spare GPUs (pool − mean serving
    demand) can run, so borrowable GPUs never lack a job while the queue stays short."""
    run = s.training_hours * 3600.0
    per_hour = max(1, math.ceil(1.2 * spare_gpus / s.training_gpus / s.training_hours))
    ck = Checkpointing(s.checkpoint_interval_s, s.checkpoint_s, s.training_restart_s)
    jobs = []
    for h in range(int(window_s // 3600)):
        for k in range(per_hour):
            jobs.append(Job(JobId(f"trn-{h}-{k}"), TRAINING,
                            (PodSet("worker", 1, PodRequest(s.training_gpus, gpu_models=(s.gpu,))),),
                            submit_time=h * 3600.0 + 1.0, run_time=run, kind=JobKind.TRAINING,
                            checkpointing=ck))
    return jobs


def tenancy_for(pool: int, floor: int, s: ServingSetup) -> Tenancy:
    lend = max(0, pool - floor)
    serving = TenantQueue(SERVING, cohort="pool", quotas=((s.gpu, FlavorQuota(pool, 0, lend)),))
    training = TenantQueue(TRAINING, cohort="pool", quotas=((s.gpu, FlavorQuota(0, None, 0)),))
    return Tenancy(tenants=(serving, training), cohorts=(Cohort("pool"),), grace_s=notice_s(s))


def notice_s(s: ServingSetup) -> float:
    """The borrower's eviction notice: the grace period, stretched to cover its checkpoint write
    (a job that checkpoints on SIGTERM needs the write to finish before it is killed)."""
    return max(s.grace_s, s.checkpoint_s)


@dataclass
class DesignResult:
    name: str
    floor: int
    pool_gpus: int
    replicas: int
    breaches: int
    breach_rate: float
    ready_p50_s: float
    ready_p99_s: float
    serving_util: float
    training_util: float
    total_util: float
    preemptions: int
    lost_gpu_hours: float
    wall_s: float


def run_design(name: str, wl: Workload, floor: int, s: ServingSetup, seed: int = 0,
               with_training: bool = True) -> DesignResult:
    nodes = wl.pool_gpus // s.gpus_per_node
    fleet = build_fleet([NodeGroup(nodes=nodes, gpu=s.gpu, gpus_per_node=s.gpus_per_node, prefix="srv")])
    spare = wl.pool_gpus - float(np.mean(wl.demand_v)) if len(wl.demand_v) else float(wl.pool_gpus)
    jobs = list(wl.serving) + (training_jobs(spare, wl.window_s, s) if with_training else [])
    res = simulate(fleet, jobs, profile("tenancy"), seed=seed, horizon=wl.window_s,
                   tenancy=tenancy_for(wl.pool_gpus, floor, s))
    ready = []
    for j in wl.serving:
        if j.submit_time <= 0.0:
            continue  # the window's initial state, not a scale-up
        start = res.starts.get(j.id)
        wait = (start - j.submit_time) if start is not None else wl.window_s - j.submit_time
        ready.append(s.detect_s + wait + (s.eviction_s if wait > 0 else 0.0) + s.model_load_s)
    r = np.array(ready) if ready else np.zeros(1)
    breaches = int((r > s.slo_s).sum())
    serving_s = sum(max(0.0, min(wl.window_s, res.finishes.get(j.id, wl.window_s)) - res.starts[j.id])
                    for j in wl.serving if j.id in res.starts)
    busy_s = _busy_gpu_seconds(res.recorder.t, res.recorder.busy, wl.window_s)
    cap = wl.pool_gpus * wl.window_s
    return DesignResult(
        name=name, floor=floor, pool_gpus=wl.pool_gpus, replicas=len(ready), breaches=breaches,
        breach_rate=breaches / max(1, len(ready)), ready_p50_s=float(np.percentile(r, 50)),
        ready_p99_s=float(np.percentile(r, 99)), serving_util=serving_s / cap,
        training_util=max(0.0, busy_s - serving_s) / cap, total_util=busy_s / cap,
        preemptions=res.preemptions, lost_gpu_hours=res.lost_gpu_s / 3600.0, wall_s=res.wall_s)


def _busy_gpu_seconds(t: list[float], busy: list[int], end: float) -> float:
    """Integral of the busy-GPU step function over [0, end]."""
    if not t:
        return 0.0
    tt = np.minimum(np.asarray(t, float), end)
    seg = np.diff(np.append(tt, end))
    return float((np.asarray(busy, float) * np.maximum(seg, 0.0)).sum())


def ramp_rate(wl: Workload, window_s: float = 600.0) -> float:
    """Largest rise of dynamic serving demand over any ``window_s`` (GPUs/s)."""
    if len(wl.demand_t) < 2:
        return 0.0
    grid = np.arange(0.0, wl.window_s, 60.0)
    idx = np.searchsorted(wl.demand_t, grid, side="right") - 1
    v = np.where(idx >= 0, wl.demand_v[np.maximum(idx, 0)], 0)
    k = max(1, int(window_s // 60))
    rise = v[k:] - v[:-k] if len(v) > k else np.zeros(1)
    return float(max(0, rise.max())) / window_s


def reclaim_time(s: ServingSetup, checkpoint_s: float | None = None) -> float:
    """T_r = detect + notice (grace, or the checkpoint write if longer) + eviction + model load:
    15 + 30 + 10 + 90 = 145 s on the defaults, the ready time ``run_design`` measures for a
    replica that waited for a reclaim."""
    ck = s.checkpoint_s if checkpoint_s is None else checkpoint_s
    return s.detect_s + max(s.grace_s, ck) + s.eviction_s + s.model_load_s


def median_demand(wl: Workload) -> float:
    """The dynamic serving demand's median over the window's time (econ/demand.py)."""
    return time_weighted_quantile(wl.demand_t, wl.demand_v, wl.window_s, 0.5)


def floors_to_try(wl: Workload, steps: int) -> list[int]:
    """Floors between the dynamic demand's median over time and the pool."""
    lo = int(median_demand(wl))
    vals = np.linspace(lo, wl.pool_gpus, steps)
    return sorted({int(round(x)) for x in vals})


def run_serving(trace: Path, s: ServingSetup, seed: int = 0,
                progress: Callable[[str], None] | None = None) -> dict:
    return compare_designs(serving_workload(trace, s), s, seed, progress)


def compare_designs(wl: Workload, s: ServingSetup, seed: int = 0,
                    progress: Callable[[str], None] | None = None) -> dict:
    designs = [run_design("dedicated", wl, wl.pool_gpus, s, seed, with_training=False)]
    if progress:
        progress("dedicated")
    designs.append(run_design("fully shared", wl, 0, s, seed))
    if progress:
        progress("fully shared")
    sweep = []
    for f in floors_to_try(wl, s.floor_steps):
        sweep.append(run_design(f"floor {f}", wl, f, s, seed))
        if progress:
            progress(f"floor {f}")
    ok = [d for d in sweep if d.breach_rate <= s.breach_target]
    best = min(ok, key=lambda d: d.floor) if ok else None
    r = ramp_rate(wl)
    return {
        "window_days": s.days, "start_day": s.start_day, "base_gpus": wl.base_gpus,
        "pool_gpus": wl.pool_gpus, "dynamic_replicas": len(wl.serving),
        "dynamic_peak_gpus": int(wl.demand_v.max()) if len(wl.demand_v) else 0,
        "dynamic_median_gpus": median_demand(wl),
        "ramp_gpus_per_s": r, "reclaim_s": reclaim_time(s),
        "reclaim_parts_s": {"detect": s.detect_s, "grace": s.grace_s, "checkpoint": s.checkpoint_s,
                            "eviction": s.eviction_s, "model_load": s.model_load_s},
        "headroom_rule_gpus": math.ceil(r * reclaim_time(s)) + 1,
        "reclaim_by_checkpoint": [
            {"checkpoint": label, "checkpoint_s": ck, "reclaim_s": reclaim_time(s, ck),
             "headroom_rule_gpus": math.ceil(r * reclaim_time(s, ck)) + 1}
            for label, ck in (("asynchronous 7B (6.3 s)", 6.3), ("synchronous 7B (148.8 s)", 148.8))],
        "designs": [vars(d) for d in designs],
        "sweep": [vars(d) for d in sweep],
        "floor_meeting_target": vars(best) if best is not None else None,
        "breach_target": s.breach_target, "slo_s": s.slo_s,
        "series": {"t": wl.demand_t.tolist(), "gpus": wl.demand_v.tolist()},
    }


def setup_from(cfg: object) -> ServingSetup:
    """A ``ServingSetup`` from the validated ``serving:`` inputs (econ/inputs.py)."""
    from dataclasses import fields
    return ServingSetup(**{f.name: getattr(cfg, f.name) for f in fields(ServingSetup)})


def default_trace(explicit: str | Path | None) -> Path:
    """The trace to replay: the explicit path, else ../shared/data/… relative to the working
    directory or to this checkout."""
    if explicit is not None:
        p = Path(explicit)
        if not p.is_file():
            raise InputError(str(p), "", "no such file (expected the Alibaba 2025 serving CSV)")
        return p
    rel = Path("shared/data/alibaba-serving-2025/disaggregated_DLRM_trace.csv")
    for root in (Path.cwd().parent, Path(__file__).resolve().parents[4]):
        if (root / rel).is_file():
            return root / rel
    raise InputError("serving.trace", "", f"../{rel} not found; pass --trace PATH to the Alibaba 2025 CSV")
