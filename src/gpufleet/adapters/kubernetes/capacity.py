"""Free, stranded and overcommitted GPUs of a snapshot: the numbers at the top of ``k8s analyze``.

- **free**: allocatable GPUs minus what bound, unfinished pods request. Two totals, named for
  what they count: ``free_on_schedulable_nodes`` (what a pending pod could be bound to now) and
  ``free_incl_unschedulable_nodes`` (also the free GPUs of cordoned and not-Ready nodes).
- **stranded**: while some pending pod asks for GPUs, every free GPU that no pending pod can use,
  whatever holds it back — the node is cordoned or not Ready, a taint no pending pod tolerates, a
  node selector or affinity, a DRA constraint, a GPU model, or the integer shape (fewer free GPUs
  than any pending pod asks, or no CPU or memory left beside them). Pending pods with DRA claims
  count in the shapes with the GPUs their claims ask. With nothing pending, free GPUs are idle,
  not stranded.
- **overcommitted**: a node whose bound pods request more GPUs than it allocates. The kubelet
  refuses such a pod at admission, so a snapshot showing one is inconsistent (a stale or merged
  capture, or pods bound around the scheduler); it is reported with the pods, not clamped away.
  Its free GPUs count as 0.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from gpufleet.adapters.kubernetes.claims import DraState
from gpufleet.adapters.kubernetes.filters import capacity_reason, pod_shape, static_reason
from gpufleet.adapters.kubernetes.nodes import KubeNode
from gpufleet.adapters.kubernetes.pods import KubePod

STRANDED_WORDS = {"too few free GPUs": "wrong shape (fewer free GPUs than any pending pod asks)",
                  "too little free CPU": "CPU exhausted on the node", "too little free memory":
                  "memory exhausted on the node", "wrong GPU model": "wrong GPU model for every pending pod"}
GPU_LAYERS = ("driver", "container-toolkit", "device-plugin")


@dataclass
class Stranded:
    node: str
    gpus: int
    reason: str


@dataclass
class Overcommit:
    node: str
    allocatable: int
    requested: float
    pods: list[str]

    @property
    def excess(self) -> float:
        return self.requested - self.allocatable


def overcommitted(nodes: list[KubeNode], used: dict[str, list[float]], pods: list[KubePod]
                  ) -> list[Overcommit]:
    """Nodes whose bound pods request more GPUs than the node allocates (module docstring). A
    node whose GPU layer is down and allocates none is left to the readiness report (its pods
    were bound before the layer failed; that line names the cause)."""
    out = []
    for n in nodes:
        limit = max(n.node.gpus, n.gpu.allocatable)
        asked = used[n.name][0]
        blocker = n.blocker
        if asked <= limit + 1e-9 or (limit == 0 and blocker is not None and blocker.name in GPU_LAYERS):
            continue
        on = sorted(p.key for p in pods if p.holds_capacity and p.node_name == n.name and p.gpus)
        out.append(Overcommit(n.name, limit, asked, on))
    return out


def raw_free(n: KubeNode, used: dict[str, list[float]]) -> float:
    """Free GPUs on ``n`` whether or not it is schedulable (never below 0: see overcommitted)."""
    return max(0.0, n.node.gpus - used[n.name][0])


def stranded(nodes: list[KubeNode], used: dict[str, list[float]], free: dict, pending: list[KubePod],
             dra: DraState) -> list[Stranded]:
    """Per node with free GPUs no pending pod can use, how many and the most common reason."""
    shapes: dict[object, KubePod] = {}
    for p in pending:
        if p.gpus:
            shapes.setdefault(pod_shape(p) or (p.namespace, p.claims), p)
    if not shapes:
        return []   # idle, not stranded: nothing pending asks for a GPU
    out = []
    for n in nodes:
        g = raw_free(n, used)
        if g < 1:
            continue
        if not n.node.health.schedulable:
            detail = n.blocker.detail if n.blocker is not None else "not schedulable"
            out.append(Stranded(n.name, int(g), f"node unschedulable ({detail})"))
            continue
        _, c, m = free[n.name]
        why: Counter[str] = Counter()
        for p in shapes.values():
            r = (static_reason(p, n, dra)
                 or (dra.reason(p, n.name, now=True) if p.claims else None)
                 or capacity_reason(p, g, c, m))
            if r is None:
                break
            why[STRANDED_WORDS.get(r.split(",")[0], r)] += 1
        else:
            out.append(Stranded(n.name, int(g), why.most_common(1)[0][0]))
    return out


def totals(nodes: list[KubeNode], used: dict, free: dict, strand: list[Stranded], pending: list[KubePod],
           over: list[Overcommit]) -> dict[str, int]:
    gpu_nodes = [n for n in nodes if n.has_gpus]
    return {
        "nodes": len(nodes), "gpu_nodes": len(gpu_nodes),
        "physical": sum(max(n.gpu.physical, n.gpu.capacity, n.node.gpus) for n in gpu_nodes),
        "registered": sum(n.gpu.capacity or n.node.gpus for n in gpu_nodes),   # DRA: published devices
        "allocatable": sum(n.gpu.allocatable or n.node.gpus for n in gpu_nodes),
        "usable": sum(n.node.gpus for n in gpu_nodes if n.node.health.schedulable),
        "allocated": int(sum(used[n.name][0] for n in gpu_nodes)),
        "free_on_schedulable_nodes": int(sum(free[n.name][0] for n in gpu_nodes)),
        "free_incl_unschedulable_nodes": int(sum(raw_free(n, used) for n in gpu_nodes)),
        "stranded": sum(s.gpus for s in strand),
        "overcommitted_nodes": len(over),
        "overcommitted_gpus": int(round(sum(o.excess for o in over))),
        "pending_pods": len(pending), "pending_gpus": sum(p.gpus for p in pending),
    }
