"""What the Studies page runs: gpufleet's own reports, on the live fleet's shape, each bounded.

Every study takes the snapshot the loop published when it was asked for (the fleet, its queue, its
tenancy) and today's engine profile, and returns one ``Table`` with today's policy in the first
row where the study compares policies. Nothing here decides or simulates by itself: the answers
are the simulator's (live/whatif.py's fork, sim/runner.py), FGD's experiment (studies/fragbench.py)
and the spares arithmetic (studies/reliability.py), as the CLI's ``simulate``, ``sweep``,
``fragbench`` and ``plan spares`` run them.

- ``policies``: the live state forked (running jobs on their nodes, the queue as it is) and run
  ``days`` ahead under today's policy and up to ``MAX_POLICIES`` others, ``seeds`` seeds (seed 0:
  run times as stated, k > 0: each remaining run time × U(0.5, 1)); per policy the mean over seeds
  of the pending jobs started within the horizon and of their mean wait.
- ``sweep``: policies × offered loads on this fleet with the simulator's generated workload
  (sim/workload.py, the tenancy's queues as tenants, ``days`` of arrivals), ``seeds`` seeds per
  cell; per cell the means of wait p50, wait p95 and GPU allocation.
- ``fragbench``: FGD's fill to 130 % (Weng et al., ATC 2023) on this fleet's nodes with the pods
  of the live jobs (pending and running, one pod per replica), per packing policy and seed; the
  KPI is the unallocated share of GPU capacity when 100 % has arrived.
- ``spares``: hot spares so that P(a failure finds no spare) < risk for this fleet's node count
  by the finite-source formula, Llama 3's failure rate and the health machine's repair times.
- ``capacity``: the committed / capacity-block / spot / on-demand mix (econ/capacity.py's MILP, the
  default prices of econ/inputs.py) for the demand this fleet has run: every finished job from
  its start to its end, every running one from its start to now (econ/demand.from_jobs).

Bounds (each a 422 naming the field): ``MAX_POLICIES`` policies, ``MAX_SEEDS`` seeds,
``MAX_DAYS`` days, ``MAX_LOADS`` loads, ``MAX_NODES`` nodes for the simulated studies.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpufleet.econ.capacity import Prices, plan_capacity, rule_rows
from gpufleet.econ.demand import from_jobs
from gpufleet.econ.inputs import load_inputs
from gpufleet.econ.spot import largest_spot_gang, spot_economics
from gpufleet.engine.profile import Profile
from gpufleet.live.snapshot import LiveSnapshot
from gpufleet.live.whatif import Change, fork
from gpufleet.model.errors import InputError
from gpufleet.model.fleet import Fleet
from gpufleet.model.job import Job
from gpufleet.policies.fgd import POLICIES as PACKING
from gpufleet.policies.registry import PROFILES, profile
from gpufleet.service.dashboard.format import duration_words
from gpufleet.service.errors import ApiError
from gpufleet.sim.fleet_events.failures import FailureConfig, mean_out_of_service_s
from gpufleet.sim.metrics import summarize
from gpufleet.sim.runner import simulate
from gpufleet.sim.workload import TenantMix, WorkloadSpec, generate
from gpufleet.studies import reliability as R
from gpufleet.studies.fragbench import Workload, run_policy
from gpufleet.traces.openb import MILLI, NodeList, PodList

KINDS = ("policies", "sweep", "fragbench", "spares", "capacity")
MAX_POLICIES, MAX_SEEDS, MAX_DAYS, MAX_LOADS, MAX_NODES = 3, 3, 7.0, 3, 2000
MAX_PODS = 20_000
DAY = 86400.0
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[str, ...]
    rows: list[list[str]]
    #: Today's policy: its rows (first) are marked; None when the study compares no policies.
    today: str | None
    notes: str = ""


@dataclass(frozen=True)
class Params:
    kind: str
    policies: tuple[str, ...] = ()
    seeds: int = 1
    days: float = 1.0
    loads: tuple[float, ...] = ()
    risk: float = 0.01
    words: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _number(form: dict[str, str], key: str, default: float, lo: float, hi: float) -> float:
    raw = form.get(key, "").strip()
    if not raw:
        return default
    try:
        v = float(raw)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or not lo <= v <= hi:
        raise ApiError(422, f"{key}: expected a number from {lo:g} to {hi:g}, got {raw[:40]!r}", key)
    return v


def _names(form: dict[str, str], key: str, allowed: list[str], most: int) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in form.get(key, "").split(",") if n.strip()))
    bad = [n for n in names if n not in allowed]
    if bad:
        raise ApiError(422, f"{key}: {bad[0][:40]!r} is not one of {', '.join(allowed)}", key)
    if len(names) > most:
        raise ApiError(422, f"{key}: at most {most} at once, got {len(names)}", key)
    return names


Runs = list[tuple[str, float, float]]


def parse(kind: str, form: dict[str, str], snap: LiveSnapshot, today: str,
          history: tuple[list[Job], Runs] | None = None) -> Params:
    """The study's parameters from the page's form; ApiError (422) naming the field. ``history``
    (capacity): the jobs that ran and their (id, start, end) runs, source time."""
    if kind not in KINDS:
        raise ApiError(404, f"no study {kind!r}; the studies are {', '.join(KINDS)}")
    if kind != "spares" and len(snap.fleet.nodes) > MAX_NODES:
        raise ApiError(422, f"fleet: {len(snap.fleet.nodes):,} nodes; the simulated studies run on at most "
                       f"{MAX_NODES:,}")
    seeds = int(_number(form, "seeds", 1, 1, MAX_SEEDS))
    if kind == "policies":
        others = tuple(p for p in _names(form, "policies", sorted(PROFILES), MAX_POLICIES) if p != today)
        if not others:
            raise ApiError(422, "policies: choose at least one policy besides today's", "policies")
        days = _number(form, "days", 1.0, 0.01, MAX_DAYS)
        return Params(kind, (today, *others), seeds, days,
                      words=f"{len(snap.pending):,} pending jobs, {days:g} d ahead, {seeds} seed(s)")
    if kind == "sweep":
        others = tuple(p for p in _names(form, "policies", sorted(PROFILES), MAX_POLICIES) if p != today)
        loads = tuple(sorted({_pct(x) for x in form.get("loads", "").split(",") if x.strip()}))
        loads = loads or (0.7, 0.9)
        if len(loads) > MAX_LOADS:
            raise ApiError(422, f"loads: at most {MAX_LOADS} at once", "loads")
        days = _number(form, "days", 1.0, 0.1, 2.0)
        return Params(kind, (today, *others), seeds, days, loads,
                      words=f"{len(others) + 1} policies × loads {', '.join(f'{x:.0%}' for x in loads)}, "
                            f"{days:g} d of arrivals, {seeds} seed(s)")
    if kind == "fragbench":
        names = _names(form, "packers", sorted(PACKING), 4) or ("fgd", "bestfit")
        return Params(kind, names, seeds, words=f"{', '.join(names)}, {seeds} seed(s)")
    if kind == "capacity":
        jobs, runs = history or ([], [])
        if not runs:
            raise ApiError(422, "capacity: no job has run on this fleet yet; there is no demand to plan for",
                           "capacity")
        hours = (max(e for _, _, e in runs) - min(s for _, s, _ in runs)) / 3600.0
        return Params(kind, words=f"{len(runs):,} runs over {hours:,.1f} h",
                      extra={"jobs": jobs, "runs": runs})
    risk = _number(form, "risk", 0.01, 1e-6, 0.5)
    return Params(kind, risk=risk, words=f"{len(snap.fleet.nodes):,} nodes, risk {risk:g}")


def _pct(raw: str) -> float:
    try:
        v = float(raw.strip().rstrip("%"))
    except ValueError:
        v = math.nan
    v = v / 100.0 if v > 1.5 else v
    if not math.isfinite(v) or not 0.05 <= v <= 1.5:
        raise ApiError(422, f"loads: percentages from 5 to 150, got {raw.strip()[:40]!r}", "loads")
    return round(v, 3)


def run(p: Params, snap: LiveSnapshot, base: Profile, progress: Progress) -> Table:
    return {"policies": _policies, "sweep": _sweep, "fragbench": _fragbench, "spares": _spares,
            "capacity": _capacity}[p.kind](p, snap, base, progress)


def _wait(s: float | None) -> str:
    return "—" if s is None or not math.isfinite(s) else duration_words(s)


def _mean(xs: list[float | None]) -> float | None:
    vals = [x for x in xs if x is not None and math.isfinite(x)]
    return statistics.fmean(vals) if vals else None


def _profile(name: str, base: Profile, today: str, snap: LiveSnapshot) -> Profile:
    return base if name == today else profile(name, snap.fleet.fabric)


def _policies(p: Params, snap: LiveSnapshot, base: Profile, progress: Progress) -> Table:
    total, done, rows = len(p.policies) * p.seeds, 0, []
    for name in p.policies:
        started, waits = [], []
        prof = _profile(name, base, p.policies[0], snap)
        for seed in range(p.seeds):
            f = fork(snap, base, Change(profile=prof), None, seed=seed, horizon_s=p.days * DAY)
            started.append(f.started)
            waits.append(f.mean_wait_s)
            done += 1
            progress(done, total)
        rows.append([name, f"{statistics.fmean(started):,.1f}", _wait(_mean(waits))])
    return Table(f"Of {len(snap.pending):,} pending jobs, started within {p.days:g} d",
                 ("policy", "started", "their mean wait"), rows, p.policies[0],
                 "The simulator forked from the live state: running jobs on their nodes with the work "
                 "they have left, the queue as it is; seed 0 takes run times as stated, the others each "
                 "remaining run time × U(0.5, 1).")


def _sweep(p: Params, snap: LiveSnapshot, base: Profile, progress: Progress) -> Table:
    fleet: Fleet = snap.fleet
    gpn = max(n.gpus for n in fleet.nodes)
    tenants = tuple(TenantMix(t.name, 1.0) for t in snap.tenancy.tenants) if snap.tenancy else None
    total, done, rows = len(p.policies) * len(p.loads) * p.seeds, 0, []
    for name in p.policies:
        prof = _profile(name, base, p.policies[0], snap)
        for load in p.loads:
            cells = []
            for seed in range(p.seeds):
                spec = WorkloadSpec(days=p.days, offered_load=load, max_gpus=min(256, fleet.total_gpus),
                                    gpus_per_node=gpn, **({"tenants": tenants} if tenants else {}))
                jobs = generate(spec, fleet.total_gpus, seed)
                r = simulate(fleet, jobs, prof, seed=seed, horizon=p.days * DAY, tenancy=snap.tenancy,
                             decision_log=False)
                cells.append(summarize(r, snap.tenancy))
                done += 1
                progress(done, total)
            rows.append([name, f"{load:.0%}", _wait(_mean([c["wait_p50_s"] for c in cells])),
                         _wait(_mean([c["wait_p95_s"] for c in cells])),
                         f"{_mean([c['gpu_allocation_pct'] for c in cells]) or 0:.1f} %",
                         f"{statistics.fmean(c['jobs_submitted'] for c in cells):,.0f}"])
    return Table(f"Policies × offered load on this fleet ({fleet.total_gpus:,} GPUs), {p.days:g} d of "
                 "arrivals", ("policy", "offered load", "wait p50", "wait p95", "GPU allocation", "jobs"),
                 rows, p.policies[0],
                 "The simulator's generated workload (sim/workload.py: Poisson arrivals, heavy-tailed gang "
                 "sizes and run times) on the live fleet's nodes; means over seeds. Today's policy is first.")


def fragbench_workload(snap: LiveSnapshot) -> Workload:
    """FGD's inputs from the live world: the fleet's nodes, and one pod per replica of every live
    job (whole GPUs as 1000 milli each, a share as its milli), running jobs first, at most
    ``MAX_PODS`` (FGD inflates the list to 130 % of capacity by drawing from it anyway)."""
    nodes = snap.fleet.nodes
    node_list = NodeList(tuple(n.id for n in nodes), np.array([n.cpus * 1000 for n in nodes], np.int64),
                         np.array([n.memory_gb * 1024 for n in nodes], np.int64),
                         np.array([n.gpus for n in nodes], np.int64), tuple(n.gpu for n in nodes))
    def pods() -> Iterator[tuple[str, int, int, int, int, frozenset[str]]]:
        for j in [rj.job for rj in snap.running.values()] + list(snap.pending.values()):
            for ps in j.pod_sets:
                r = ps.request
                if r.mig_profile is not None or (r.gpus == 0 and r.gpu_milli == 0):
                    continue   # a MIG slice or a CPU pod: not a GPU request FGD models
                for k in range(ps.replicas):
                    yield (f"{j.id}/{ps.name}/{k}", int(r.cpus * 1000), int(r.memory_gb * 1024),
                           r.gpus if r.gpus > 0 else 1, MILLI if r.gpus > 0 else r.gpu_milli,
                           frozenset(r.gpu_models))

    rows = list(itertools.islice(pods(), MAX_PODS))
    names = [row[0] for row in rows]
    if not names:
        raise ApiError(422, "fragbench: no live job asks for GPUs, so there are no pods to replay", "packers")
    _, cpu, mem, count, milli, spec = zip(*rows, strict=True)
    pod_list = PodList(tuple(names), np.array(cpu, np.int64), np.array(mem, np.int64),
                       np.array(count, np.int64), np.array(milli, np.int64), tuple(spec))
    return Workload(node_list, pod_list)


def _fragbench(p: Params, snap: LiveSnapshot, base: Profile, progress: Progress) -> Table:
    work = fragbench_workload(snap)
    total, done, rows = len(p.policies) * p.seeds, 0, []
    for name in p.policies:
        def tick(_: object) -> None:
            nonlocal done
            done += 1
            progress(done, total)
        res = run_policy(work, PACKING[name], seeds=tuple(range(42, 42 + p.seeds)), on_run=tick)
        s = res.summary()
        rows.append([name, f"{s['unallocated_pct_at_100']:.2f} %", f"{s['alloc_pct_at_130']:.1f} %"])
    return Table(f"FGD's fill on this fleet ({len(work.nodes):,} nodes) with the live jobs' "
                 f"{len(work.pods):,} pods",
                 ("packing policy", "unallocated at 100 % arrived", "allocated at 130 % arrived"), rows, None,
                 "Pods arrive shuffled and inflated to 130 % of GPU capacity; one that fits nowhere fails; "
                 "nothing departs (studies/fragbench.py). Lower unallocated is better.")


def _spares(p: Params, snap: LiveSnapshot, base: Profile, progress: Progress) -> Table:
    nodes = len(snap.fleet.nodes)
    gpn = max(n.gpus for n in snap.fleet.nodes)
    cfg = FailureConfig()
    r, away = cfg.rate_per_node_s(gpn), mean_out_of_service_s(cfg, gpn)
    s = R.spares_for_pool_finite(nodes, r, away, p.risk)
    progress(1, 1)
    rows = [[f"{k:,}", f"{R.no_spare_probability_finite(nodes, k, r, away):.3%}"]
            for k in sorted({max(0, s - 1), s, s + 1})]
    return Table(f"Hot spares for {nodes:,} nodes: {s} keep P(no spare when needed) under {p.risk:g}",
                 ("spares", "P(a failure finds no spare)"), rows, None,
                 f"Finite source (studies/reliability.py): {nodes * r * DAY:.2f} failures a day (Llama 3's "
                 f"rate), each node away {away / DAY:.2f} d on average (the health machine's steps, repair "
                 "or RMA by kind).")


def _capacity(p: Params, snap: LiveSnapshot, base: Profile, progress: Progress) -> Table:
    cfg = load_inputs(None)
    c, sp = cfg.capacity, cfg.spot
    gpn = max(n.gpus for n in snap.fleet.nodes)
    notice_min = sp.notice_s / 60.0
    args = (sp.price_ratio, sp.checkpoint_write_min, sp.restart_min, sp.node_mtbi_h * 60.0)
    one = spot_economics(*args, 1, notice_min)
    max_nodes = largest_spot_gang(*args, notice_min=notice_min)
    t0 = min(s for _, s, _ in p.extra["runs"])   # the curve starts at the first run's hour
    runs = [(j, s - t0, e - t0) for j, s, e in p.extra["runs"]]
    try:
        d = from_jobs("this fleet's runs", p.extra["jobs"], runs, gpn, max_nodes)
    except InputError as e:
        raise ApiError(422, f"capacity: {e}", "capacity") from None
    prices = Prices(od=c.od_price_per_gpu_hr, committed_ratio=c.committed_ratio,
                    block=c.capacity_block_price_per_gpu_hr, block_hours=24 * c.capacity_block_days,
                    gpus_per_node=gpn, spot_effective=one.effective_price,
                    spot_by_nodes=tuple((n, spot_economics(*args, n, notice_min).effective_price)
                                        for n in sorted(set(d.by_nodes()) | {1})))
    plan = plan_capacity(d, prices)
    progress(1, 1)
    rows = [[r.label, f"{r.committed:,.0f}", f"{r.used_fraction:.0%}", f"${r.cost:,.0f}", r.basis]
            for r in rule_rows(plan)]
    rows.append(["all on demand", "0", "—", f"${plan.all_od_cost:,.0f}", "on-demand price"])
    return Table(f"Capacity mix for {d.hours:,} h of this fleet's demand (mean {plan.mean:,.0f} GPUs, "
                 f"peak {plan.peak:,.0f})", ("rule", "committed GPUs", "hours over it", "cost", "basis"),
                 rows, None,
                 f"econ/capacity.py's MILP (HiGHS) at the default prices (on demand "
                 f"${c.od_price_per_gpu_hr:g}/GPU-h, commitment at {c.committed_ratio:g}×); the demand "
                 "is the GPUs this fleet's jobs held each hour (finished ones start to end, running ones "
                 "to now).")
