"""Fixes for a waiting gang, ranked by displacement: GPU-hours of other work moved.

Two kinds:

- **configuration** (displacement 0): nodes the gang is kept off by something a person can
  change — an untolerated taint, a GPU layer down, a cordon, a model selector. Each fix names
  the change and how many nodes it opens; listed only when those nodes (empty of this gang's
  competitors or not) have the GPUs one pod needs.
- **moving work**: for each node, the cheapest set of running gangs whose eviction frees room
  for one pod there, cost = Σ over the evicted gangs of GPU-equivalents × hours they have run
  (defrag.displaced_gpu_h, the cost the defrag plans use: the work lost without a checkpoint; a
  gang's pods on other nodes go too). The gang's pods take the cheapest
  nodes (one pod per node here, distinct evictions counted once).

The cheapest set per node is found by trying running gangs on that node in order of cost per
freed GPU (a greedy cover, exact when every gang frees the same number of GPUs there). When
the evicted pods fit in free GPUs on other nodes (first-fit decreasing), the fix is a defrag
move — the work is restarted elsewhere at once — and is tagged so.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from gpufleet.adapters.kubernetes.defrag import displaced_gpu_h
from gpufleet.adapters.kubernetes.jobs import Gang
from gpufleet.adapters.kubernetes.nodes import KubeNode


@dataclass(frozen=True, slots=True)
class Fix:
    what: str
    displaced_gpu_h: float


def rank_fixes(g: Gang, reasons: Counter[str], nodes: list[KubeNode], free: dict,
               running: list[Gang], now: float, cache: dict | None = None) -> list[Fix]:
    """The fixes for ``g`` (module docstring). They depend on the gang only through its first
    pod's GPUs and claims, its size, ``minMember`` and its per-node reasons, so ``cache`` (kept
    by the caller for one snapshot) answers every gang alike at once."""
    pod = g.pods[0]
    key = (pod.gpus, bool(pod.claims), tuple(sorted(reasons.items())), len(g.pods), g.min_member)
    if cache is not None and key in cache:
        return list(cache[key])
    out = _rank(g, reasons, nodes, free, running, now, cache if cache is not None else {})
    if cache is not None:
        cache[key] = list(out)
    return out


def _rank(g: Gang, reasons: Counter[str], nodes: list[KubeNode], free: dict,
          running: list[Gang], now: float, cache: dict) -> list[Fix]:
    pod = g.pods[0]
    need = max(1, pod.gpus)
    out: list[Fix] = []
    for why, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
        if why.startswith("untolerated taint "):
            taint = why.removeprefix("untolerated taint ")
            out.append(Fix(f"tolerate taint {taint} (opens {n} node(s))", 0.0))
        elif why.startswith("GPU layer down: "):
            out.append(Fix(f"repair the {why.removeprefix('GPU layer down: ')} layer on {n} node(s)", 0.0))
        elif why == "node not ready":
            out.append(Fix(f"bring {n} node(s) back to Ready / uncordon them", 0.0))
        elif why == "wrong GPU model":
            out.append(Fix(f"allow other GPU models (opens {n} node(s))", 0.0))
    if pod.claims or not pod.gpus:
        return out
    cost_on = cache.get(("cost_on", need))
    if cost_on is None:
        cost_on = cache[("cost_on", need)] = _cost_on(need, nodes, free, _by_node(running, now, cache))
    picks = cost_on[: min(len(g.pods), g.min_member)]
    if len(picks) >= min(len(g.pods), g.min_member):
        evicted = sorted({k for _, (_, ks) in picks for k in ks})
        cost = sum(c for _, (c, _) in picks)
        where = ", ".join(name for name, _ in picks)
        moved = [p.gpus for rg in running if rg.key in evicted for p in rg.pods]
        room = sorted((int(free[n.name][0]) for n in nodes
                       if n.name not in dict(picks) and n.node.health.schedulable), reverse=True)
        tag = " (a defrag move: they fit in free GPUs elsewhere now)" if _packs(moved, room) else ""
        out.append(Fix(f"evict {', '.join(evicted)} to place on {where}{tag}", round(cost, 2)))
    return sorted(out, key=lambda f: (f.displaced_gpu_h, f.what))


def _by_node(running: list[Gang], now: float, cache: dict) -> dict[str, list[tuple[float, int, str]]]:
    """Per node, (cost, GPUs it frees there, gang) of each running gang, cheapest per GPU first:
    a gang with two 4-GPU pods on one node frees 8 there, not 4."""
    by_node = cache.get("by_node")
    if by_node is None:
        by_node = {}
        for rg in running:
            cost = displaced_gpu_h(rg, now)
            here = Counter()
            for p in rg.pods:
                here[p.node_name] += p.gpus
            for node_name, gpus in here.items():
                by_node.setdefault(node_name, []).append((cost, gpus, rg.key))
        for v in by_node.values():
            v.sort(key=lambda x: (x[0] / max(x[1], 1), x[2]))
        cache["by_node"] = by_node
    return by_node


def _cost_on(need: int, nodes: list[KubeNode], free: dict, by_node: dict) -> list[tuple[str, tuple]]:
    """(node, (cost, gangs)) of the cheapest evictions that free ``need`` GPUs, cheapest first."""
    cost_on: dict[str, tuple[float, list[str]]] = {}
    for n in nodes:
        if not n.node.health.schedulable or n.node.gpus < need:
            continue
        have = free[n.name][0]
        chosen: list[str] = []
        total = 0.0
        for cost, gpus, key in by_node.get(n.name, []):
            if have >= need:
                break
            if gpus <= 0:
                continue
            chosen.append(key)
            total += cost
            have += gpus
        if have >= need and chosen:
            cost_on[n.name] = (total, chosen)
    return sorted(cost_on.items(), key=lambda kv: (kv[1][0], kv[0]))


def _packs(items: list[int], bins: list[int]) -> bool:
    """First-fit decreasing: can these pods' GPU counts go into these free-GPU bins?"""
    left = list(bins)
    for size in sorted(items, reverse=True):
        i = next((i for i, b in enumerate(left) if b >= size), None)
        if i is None:
            return False
        left[i] -= size
    return True
