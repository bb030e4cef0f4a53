"""Which nodes a pending pod may use, and for every other node the first reason why not.

The order follows kube-scheduler's filters, so the counts read like its ``0/N nodes are
available`` line, with reasons a person can act on: node not ready (and which GPU layer
failed), GPU model, node selector, required node affinity, untolerated taint, DRA claims,
then free capacity (GPUs, CPU, memory).
Only ``NoSchedule`` and ``NoExecute`` taints filter; ``PreferNoSchedule`` only scores.
"""

from __future__ import annotations

from collections import Counter

from gpufleet.adapters.kubernetes.affinity import matches
from gpufleet.adapters.kubernetes.claims import DraState
from gpufleet.adapters.kubernetes.nodes import KubeNode
from gpufleet.adapters.kubernetes.pods import PRODUCT_LABEL, KubePod

FILTERING_EFFECTS = ("NoSchedule", "NoExecute")


def untolerated(pod: KubePod, node: KubeNode) -> str | None:
    for t in node.taints:
        if t.effect in FILTERING_EFFECTS and not any(tol.tolerates(t.key, t.value, t.effect)
                                                     for tol in pod.tolerations):
            return t.key
    return None


def static_reason(pod: KubePod, node: KubeNode, dra: DraState | None = None) -> str | None:
    """The reason that does not depend on what runs on the node (None: the node is eligible)."""
    blocker = node.blocker
    wants_gpu = bool(pod.gpus or pod.mig or pod.claims)
    if blocker is not None and blocker.name == "node":
        return "node not ready"
    if blocker is not None and blocker.name != "allocatable" and wants_gpu:
        return f"GPU layer down: {blocker.name}"
    if pod.gpu_models and node.node.gpu not in pod.gpu_models:
        return "wrong GPU model"
    for k, v in pod.node_selector.items():
        if k != PRODUCT_LABEL and node.labels.get(k) != v:
            return f"node selector {k}={v} not matched"
    if pod.affinity and not matches(pod.affinity, node.labels, node.name):
        return "node affinity not matched"
    taint = untolerated(pod, node)
    if taint is not None:
        return f"untolerated taint {taint}"
    if pod.claims:
        if dra is None:
            return "DRA claims but no ResourceSlices in the snapshot"
        return dra.reason(pod, node.name, now=False)
    if (pod.gpus or pod.mig) and not node.has_gpus:
        return "no GPUs"
    return None


def capacity_reason(pod: KubePod, free_gpu: float, free_cpu: float, free_mem: float,
                    free_mig: dict[str, int] | None = None) -> str | None:
    short = []
    if pod.gpus > free_gpu:
        short.append("too few free GPUs")
    for profile, n in pod.mig.items():
        if n > (free_mig or {}).get(profile, 0):
            short.append(f"too few free MIG {profile}")
    if pod.cpus > free_cpu + 1e-9:
        short.append("too little free CPU")
    if pod.memory_gb > free_mem + 1e-9:
        short.append("too little free memory")
    return ", ".join(short) or None


def pod_shape(pod: KubePod) -> tuple | None:
    """Everything the node filters read of a pod: pods of one shape get the same answers on
    every node. None for a pod with DRA claims (its claims are its own: answered alone)."""
    if pod.claims:
        return None
    return (pod.gpus, tuple(sorted(pod.mig.items())), pod.cpus, pod.memory_gb, pod.gpu_models,
            pod.tolerations, tuple(sorted(pod.node_selector.items())), pod.affinity)


def node_reasons(pod: KubePod, nodes: list[KubeNode], free: dict[str, tuple[float, float, float]],
                 dra: DraState | None = None, mig_free: dict[str, dict[str, int]] | None = None,
                 cache: dict | None = None) -> Counter[str]:
    """Per reason, how many nodes fail this pod (eligible nodes with room count as "fits").
    ``cache`` (a dict kept by the caller for one snapshot) answers a pod of a shape already
    counted at once: 12,000 pods of a few shapes on 4,000 nodes are a few counts, not 48 million
    filter calls."""
    shape = pod_shape(pod) if cache is not None else None
    if shape is not None and shape in cache:
        return Counter(cache[shape])
    out = _node_reasons(pod, nodes, free, dra, mig_free)
    if shape is not None and cache is not None:
        cache[shape] = Counter(out)
    return out


def _node_reasons(pod: KubePod, nodes: list[KubeNode], free: dict[str, tuple[float, float, float]],
                  dra: DraState | None, mig_free: dict[str, dict[str, int]] | None) -> Counter[str]:
    out: Counter[str] = Counter()
    for n in nodes:
        why = static_reason(pod, n, dra)
        if why is None:
            g, c, m = free[n.name]
            why = ((dra.reason(pod, n.name, now=True) if pod.claims and dra is not None else None)
                   or capacity_reason(pod, g, c, m, (mig_free or {}).get(n.name)) or "fits")
        out[why] += 1
    return out


def summary(counts: Counter[str]) -> str:
    """``212 nodes: too few free GPUs; 40: untolerated taint ...`` (largest first)."""
    parts = sorted(((n, r) for r, n in counts.items() if r != "fits"), key=lambda x: (-x[0], x[1]))
    text = "; ".join(f"{n} node{'s' if n != 1 else ''}: {r}" if i == 0 else f"{n}: {r}"
                     for i, (n, r) in enumerate(parts))
    fits = counts.get("fits", 0)
    return text + (f" ({fits} node{'s' if fits != 1 else ''} would fit one pod)" if fits else "")
