"""The uncoordinated pair vs the coordination rules, simulated over days of RayCluster arrivals.

Each arriving RayCluster runs one placement group for its run time, then goes away.

- **Uncoordinated**: the cluster scheduler below binds pods one at a time as they fit (``per-pod``,
  kube-scheduler's behaviour); the RayCluster asks for its head and ``workers_needed`` pods of the
  worker template size; its group runs only once every pod is bound; its workers stay
  ``idle_timeout_s`` after the group ends before the autoscaler removes them (KubeRay's
  ``idleTimeoutSeconds``, 60 s by default).
- **Gang-admit only**: the same template-sized workers and idle timeout, but admitted as one gang
  (separates the cost of one-pod-at-a-time binding from the cost of oversized workers).
- **Coordinated**: head and bundle-sized workers are one gang, admitted whole (``gang-easy``: gang
  best fit with a reservation for the head of the queue, so large clusters are not starved), and
  released when the group ends.

*Useful* GPU-time is what the placement groups' bundles use: Σ bundle GPUs × run time, within the
window. Held is what the simulator counts as allocated; held − useful is the waste of the pair.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gpufleet.adapters.ray.mapping import Bundle, PlacementGroupSpec, Strategy
from gpufleet.adapters.ray.raycluster import RayClusterSpec, gang_job
from gpufleet.model.fleet import Fleet
from gpufleet.model.job import Job
from gpufleet.policies.registry import profile
from gpufleet.sim.metrics import summarize
from gpufleet.sim.runner import simulate


@dataclass(frozen=True)
class Arrival:
    cluster: RayClusterSpec
    submit: float
    run_time: float


def raycluster_workload(fleet_gpus: int, days: float, load: float, seed: int,
                        worker_gpus: int = 8, head_cpus: float = 8.0) -> list[Arrival]:
    """Poisson arrivals at ``load`` × the fleet's GPUs (in bundle GPUs); each group 2–4 bundles of
    1, 2, 4 or 8 GPUs, STRICT_SPREAD or PACK; run time log-normal with median 2 h (seeded)."""
    rng = np.random.default_rng(seed)
    mean_gpus = 3 * 3.75  # E[bundles] × E[bundle GPUs] = 3 × (1 + 2 + 4 + 8) / 4
    mean_run = 7200.0 * float(np.exp(0.8**2 / 2))  # log-normal mean: median × e^(σ²/2)
    rate = load * fleet_gpus / (mean_gpus * mean_run)
    t, out, i = 0.0, [], 0
    while True:
        t += float(rng.exponential(1.0 / rate))
        if t >= days * 86400.0:
            return out
        n = int(rng.integers(2, 5))
        g = int(rng.choice([1, 2, 4, 8]))
        strat = Strategy.STRICT_SPREAD if rng.random() < 0.5 else Strategy.PACK
        name = f"rc{i:04d}"
        pg = PlacementGroupSpec(name, (Bundle(g),) * n, strat)
        run = float(np.ceil(7200.0 * np.exp(rng.normal(0, 0.8)) / 60) * 60)
        out.append(Arrival(RayClusterSpec(name, pg, worker_gpus, head_cpus), t, run))
        i += 1


def uncoordinated_jobs(arrivals: list[Arrival], idle_timeout_s: float = 60.0) -> list[Job]:
    return [gang_job(a.cluster, a.run_time + idle_timeout_s, a.submit, worker_gpus=a.cluster.worker_gpus)
            for a in arrivals]


def coordinated_jobs(arrivals: list[Arrival]) -> list[Job]:
    return [gang_job(a.cluster, a.run_time, a.submit) for a in arrivals]


def useful_gpu_s(arrivals: list[Arrival], starts: dict[str, float], end: float) -> float:
    by = {a.cluster.name: a for a in arrivals}
    return sum(by[j].cluster.pg.gpus * max(0.0, min(s + by[j].run_time, end) - s)
               for j, s in starts.items() if j in by)


def simulate_pair(fleet: Fleet, arrivals: list[Arrival], seed: int = 0,
                  idle_timeout_s: float = 60.0) -> dict[str, dict[str, float]]:
    """Per side: held and useful GPU share of the window, idle-held share, wait p50, deadlock."""
    end = max((a.submit for a in arrivals), default=0.0)
    out: dict[str, dict[str, float]] = {}
    sides = {"uncoordinated": (uncoordinated_jobs(arrivals, idle_timeout_s), "per-pod"),
             "gang-admit only": (uncoordinated_jobs(arrivals, idle_timeout_s), "gang-easy"),
             "coordinated": (coordinated_jobs(arrivals), "gang-easy")}
    for side, (jobs, policy) in sides.items():
        r = simulate(fleet, jobs, profile(policy), seed=seed, horizon=end)
        s = summarize(r)
        useful = 100 * useful_gpu_s(arrivals, r.starts, end) / (fleet.total_gpus * end) if end else 0.0
        out[side] = {"held_pct": s["gpu_allocation_pct"], "useful_pct": useful,
                     "idle_held_pct": max(0.0, s["gpu_allocation_pct"] - useful),
                     "wait_p50_s": s["wait_p50_s"], "wait_p95_s": s["wait_p95_s"],
                     "started": float(len(r.starts)),
                     "deadlocked": float(r.deadlocked)}
    return out


def with_worker_gpus(arrivals: list[Arrival], worker_gpus: int) -> list[Arrival]:
    return [replace(a, cluster=replace(a.cluster, worker_gpus=worker_gpus)) for a in arrivals]
