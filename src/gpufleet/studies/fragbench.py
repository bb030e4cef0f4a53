"""FGD's experiment (Weng et al., ATC 2023): fill a cluster with a shuffled, inflated pod list.

One run, for a seed s (numpy Generator seeded with s, passed in explicitly):
1. Node priority: a random permutation of the nodes; score ties go to the earlier node.
2. Arrival order: pods sorted by name, then shuffled.
3. Inflation ("tuning") to `ratio` x cluster GPU milli: while below target, draw a pod uniformly with
   replacement from the original list and append it, stopping before the first draw whose per-GPU
   milli would cross the target (FGD's check adds milli, not milli x count); if above target, drop
   uniformly random pods until at or below it.
4. Place pods one at a time; a pod that fits nowhere fails for good; nothing departs.
After each pod, record arrived GPU milli (failed pods included), allocated GPU milli and the
cluster's fragmentation sum_n F_n(M). Curves are read at arrived = 0..130 % of GPU capacity: events
are binned by rounded arrived %, averaged per bin; an empty bin takes its neighbour's value.
The headline KPI is 100 - allocation % at arrived = 100 %.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gpufleet.policies.fgd import PackingPolicy
from gpufleet.policies.fgd.cluster import ClusterState, PodRequest
from gpufleet.policies.fgd.measure import FragTable, TypicalPods, typical_pods
from gpufleet.traces.openb import MILLI, NodeList, PodList

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
DEFAULT_SEEDS = tuple(range(42, 52))
TUNE_RATIO = 1.3
X_MAX = 130


@dataclass(frozen=True, eq=False)
class RunTrace:
    """Per-pod series of one run (after each arrival)."""

    policy: str
    seed: int
    arrived_milli: IntArray
    used_milli: IntArray
    frag_milli: FloatArray
    failed: int


@dataclass(frozen=True, eq=False)
class Curves:
    """Series at arrived = 0..130 % of cluster GPU capacity (index = arrived %)."""

    alloc_pct: FloatArray
    frag_pct: FloatArray
    frag_ratio_pct: FloatArray


class Workload:
    """A node list and a pod list prepared once for many runs: models, requests, target workload."""

    def __init__(self, nodes: NodeList, pods: PodList, typical: TypicalPods | None = None) -> None:
        self.nodes = nodes
        self.pods = pods
        self.typical = typical if typical is not None else typical_pods(
            pods.cpu_milli, pods.gpu_milli, pods.num_gpu, pods.gpu_spec)
        self.models = tuple(sorted(set(nodes.model)))
        self.table = FragTable(self.typical, self.models, max(int(nodes.gpus.max()), 1))
        self.capacity_milli = nodes.total_gpu_milli
        masks: dict[frozenset[str], npt.NDArray[np.bool_]] = {}
        self.requests: list[PodRequest] = []
        for i in range(len(pods)):
            spec = pods.gpu_spec[i]
            if spec not in masks:
                masks[spec] = np.array([bool(m) and (not spec or m in spec) for m in self.models])
            self.requests.append(PodRequest(
                cpu=int(pods.cpu_milli[i]), mem=int(pods.memory_mib[i]), count=int(pods.num_gpu[i]),
                milli=int(pods.gpu_milli[i]), allowed=masks[spec]))
        self.name_order = np.array(sorted(range(len(pods)), key=lambda i: pods.names[i]), dtype=np.int64)


def arrival_order(work: Workload, rng: np.random.Generator, ratio: float = TUNE_RATIO) -> IntArray:
    """Indices into the pod list in arrival order: shuffled by name order, then inflated or pruned."""
    order = work.name_order[rng.permutation(len(work.name_order))]
    total_of = work.pods.total_gpu_milli
    target = ratio * work.capacity_milli
    total = int(total_of.sum())
    if total > target:
        kept = list(order)
        while total > target and kept:
            total -= int(total_of[kept.pop(int(rng.integers(len(kept))))])
        return np.array(kept, dtype=np.int64)
    if not total_of.any():
        return order  # no pod asks for a GPU: no number of copies reaches a GPU target
    extra: list[IntArray] = []
    n = len(work.pods)
    while True:
        draw = rng.integers(n, size=1024)
        before = total + np.concatenate(([0], np.cumsum(total_of[draw])[:-1]))
        over = np.flatnonzero(before + work.pods.gpu_milli[draw] > target)
        if len(over):
            extra.append(draw[: over[0]])
            break
        extra.append(draw)
        total = int(before[-1] + total_of[draw[-1]])
    return np.concatenate([order, *extra])


def run_once(work: Workload, policy: PackingPolicy, seed: int, ratio: float = TUNE_RATIO) -> RunTrace:
    """One seeded run of the experiment; deterministic for (workload, policy, seed)."""
    rng = np.random.default_rng(seed)
    state = ClusterState(work.nodes, rng.permutation(len(work.nodes)), work.models, work.table)
    arrivals = arrival_order(work, rng, ratio)
    arrived = np.empty(len(arrivals), dtype=np.int64)
    used = np.empty(len(arrivals), dtype=np.int64)
    frag = np.empty(len(arrivals), dtype=np.float64)
    arrived_now = used_now = failed = 0
    frag_now = float(state.frag.sum())
    for step, idx in enumerate(arrivals):
        pod = work.requests[idx]
        arrived_now += pod.total_milli
        cand = state.feasible(pod)
        if len(cand):
            node, gpus = policy.choose(state, pod, cand, rng)
            before = state.frag[node]
            state.apply(node, gpus, pod)
            frag_now += state.frag[node] - before
            used_now += pod.total_milli
        else:
            failed += 1
        arrived[step], used[step], frag[step] = arrived_now, used_now, frag_now
    return RunTrace(policy.name, seed, arrived, used, frag, failed)


def _binned(x: IntArray, values: FloatArray) -> FloatArray:
    sums = np.bincount(x, weights=values, minlength=X_MAX + 1)[: X_MAX + 1]
    counts = np.bincount(x, minlength=X_MAX + 1)[: X_MAX + 1]
    out = np.full(X_MAX + 1, np.nan)
    np.divide(sums, counts, out=out, where=counts > 0)
    for i in np.flatnonzero(counts == 0):
        neighbours = [out[j] for j in (i - 1, i + 1) if 0 <= j <= X_MAX and counts[j] > 0]
        if neighbours:
            out[i] = neighbours[0]
    return out


def curves(trace: RunTrace, capacity_milli: int) -> Curves:
    """Allocation %, fragmentation % of capacity and fragmentation % of idle at arrived 0..130 %."""
    x = np.rint(100.0 * trace.arrived_milli / capacity_milli).astype(np.int64)
    keep = x <= X_MAX
    x = x[keep]
    used = trace.used_milli[keep].astype(np.float64)
    frag = trace.frag_milli[keep]
    idle = capacity_milli - used
    ratio = np.divide(frag, idle, out=np.zeros_like(frag), where=idle > 0)
    return Curves(
        alloc_pct=_binned(x, 100.0 * used / capacity_milli),
        frag_pct=_binned(x, 100.0 * frag / capacity_milli),
        frag_ratio_pct=_binned(x, 100.0 * ratio),
    )


@dataclass(frozen=True, eq=False)
class PolicyResult:
    """Curves of every seed of one policy, and the experiment's KPIs over seeds."""

    policy: str
    seeds: tuple[int, ...]
    curves: tuple[Curves, ...]
    failed: tuple[int, ...]
    seconds: float

    @property
    def unallocated_at_100(self) -> FloatArray:
        return np.array([100.0 - c.alloc_pct[100] for c in self.curves])

    @property
    def alloc_at_130(self) -> FloatArray:
        return np.array([c.alloc_pct[X_MAX] for c in self.curves])

    def summary(self) -> dict[str, float]:
        un = self.unallocated_at_100
        return {
            "unallocated_pct_at_100": round(float(un.mean()), 3),
            "unallocated_std": round(float(un.std(ddof=1)) if len(un) > 1 else 0.0, 3),
            "alloc_pct_at_130": round(float(self.alloc_at_130.mean()), 3),
        }


def run_policy(work: Workload, policy: PackingPolicy, seeds: Sequence[int] = DEFAULT_SEEDS,
               on_run: Callable[[RunTrace], None] | None = None,
               clock: Callable[[], float] | None = None) -> PolicyResult:
    """All seeds of one policy; `on_run` is told after each run (progress), `clock` times the batch."""
    start = clock() if clock else 0.0
    results: list[Curves] = []
    failed: list[int] = []
    for seed in seeds:
        trace = run_once(work, policy, seed)
        results.append(curves(trace, work.capacity_milli))
        failed.append(trace.failed)
        if on_run:
            on_run(trace)
    seconds = (clock() - start) if clock else 0.0
    return PolicyResult(policy.name, tuple(seeds), tuple(results), tuple(failed), seconds)


__all__ = ["MILLI", "Curves", "PolicyResult", "RunTrace", "Workload", "arrival_order", "curves",
           "run_once", "run_policy"]
