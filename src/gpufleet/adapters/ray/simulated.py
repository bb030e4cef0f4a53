"""The uncoordinated pair vs the coordination rules, simulated over days of RayCluster arrivals.

Each arriving RayCluster runs one placement group for its run time, then goes away.

- **Uncoordinated**: the cluster scheduler below binds pods one at a time as they fit (``per-pod``,
  kube-scheduler's behaviour); the RayCluster asks for its head and ``workers_needed`` pods of the
  worker template size; its group runs only once every pod is bound; its workers stay
  ``idle_timeout_s`` after the group ends before the autoscaler removes them (KubeRay's
  ``idleTimeoutSeconds``, 60 s by default).
- **Gang-admit only** and **bundle-sized only**: one rule each, the rest as uncoordinated (what
  each rule is worth on its own).
- **Coordinated**: head and bundle-sized workers are one gang, admitted whole (``gang-easy``: gang
  best fit with a reservation for the head of the queue, so large clusters are not starved), and
  released when the group ends.

*Useful* GPU-time is what the placement groups' bundles use: Σ bundle GPUs × run time, within the
window. Held is what the simulator counts as allocated; held − useful is the waste of the pair.
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class Rules:
    """Which coordination rules hold. The head's CPUs are always in the job (the fleet's 224-CPU
    nodes never run out of CPU in this workload, so reserving them changes nothing here)."""

    gang_admit: bool  # the head and all workers bound as one gang (else one pod at a time)
    bundle_sized: bool  # one worker per bundle, of the bundle's size (else the template's size)
    scale_down: bool  # workers go when the group ends (else they idle ``idle_timeout_s`` first)

    @property
    def policy(self) -> str:
        return "gang-easy" if self.gang_admit else "per-pod"

    def jobs(self, arrivals: list[Arrival], idle_timeout_s: float = 60.0) -> list[Job]:
        tail = 0.0 if self.scale_down else idle_timeout_s
        return [gang_job(a.cluster, a.run_time + tail, a.submit,
                         worker_gpus=None if self.bundle_sized else a.cluster.worker_gpus)
                for a in arrivals]


#: The uncoordinated pair, each rule alone, and all of them.
SIDES = {
    "uncoordinated": Rules(False, False, False),
    "gang-admit only": Rules(True, False, False),
    "bundle-sized only": Rules(False, True, False),
    "coordinated": Rules(True, True, True),
}


def useful_gpu_s(arrivals: list[Arrival], starts: dict[str, float], end: float) -> float:
    by = {a.cluster.name: a for a in arrivals}
    return sum(by[j].cluster.pg.gpus * max(0.0, min(s + by[j].run_time, end) - s)
               for j, s in starts.items() if j in by)


def simulate_pair(fleet: Fleet, arrivals: list[Arrival], seed: int = 0,
                  idle_timeout_s: float = 60.0) -> dict[str, dict[str, float]]:
    """Per side: held and useful GPU share of the window, idle-held share, wait p50, deadlock."""
    end = max((a.submit for a in arrivals), default=0.0)
    out: dict[str, dict[str, float]] = {}
    for side, rules in SIDES.items():
        r = simulate(fleet, rules.jobs(arrivals, idle_timeout_s), profile(rules.policy), seed=seed,
                     horizon=end)
        s = summarize(r)
        useful = 100 * useful_gpu_s(arrivals, r.starts, end) / (fleet.total_gpus * end) if end else 0.0
        out[side] = {"held_pct": s["gpu_allocation_pct"], "useful_pct": useful,
                     "idle_held_pct": max(0.0, s["gpu_allocation_pct"] - useful),
                     "wait_p50_s": s["wait_p50_s"], "wait_p95_s": s["wait_p95_s"],
                     "started": float(len(r.starts)),
                     "deadlocked": float(r.deadlocked)}
    return out


