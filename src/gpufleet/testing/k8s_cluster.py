"""A large Kubernetes snapshot for speed checks, built from one real Node object.

A test double, said so wherever it is used: every Node is a copy of a real ``kubectl get node
-o json`` object (the caller passes it, e.g. tests/data/k8s/nodes-rke2-gpu.json's ``nori``)
renamed and given 8 GPUs and 64 CPUs; the Pods follow the NVIDIA device plugin's documented
``gpu-pod`` manifest (``nvidia.com/gpu`` limits = requests, the ``nvidia.com/gpu`` toleration).
Seeded, so the same arguments give the same snapshot.

Shape of the cluster (the worst case the defrag plan meets at scale): nodes are filled with
1/2/4-GPU pods to 60-100 % (started 1-12 h before the snapshot), so the free GPUs are scattered;
the rest of the pods are pending: single 8-GPU pods, JobSets of two 8-GPU pods and small pods,
so many waiting gangs fit the empty cluster and none fits the free room without moves. One node
in 50 is cordoned, one in 40 carries a taint nobody tolerates.
"""

from __future__ import annotations

import copy
import random
from typing import Any

STAMP = "2025-03-19T{h:02d}:{m:02d}:00Z"


def _pod(name: str, gpus: int, cpu: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
    res = {"nvidia.com/gpu": str(gpus), "cpu": str(cpu)}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench", "labels": labels or {},
                         "creationTimestamp": STAMP.format(h=9, m=0)},
            "spec": {"containers": [{"name": "c", "resources": {"limits": res, "requests": res}}],
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                      "effect": "NoSchedule"}],
                     "schedulerName": "default-scheduler"},
            "status": {"phase": "Pending"}}


def large_cluster(template: dict[str, Any], nodes: int = 4000, pods: int = 12000,
                  seed: int = 0) -> list[dict[str, Any]]:
    """``nodes`` Node objects and ``pods`` Pod objects (module docstring), as one flat list."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    running: list[dict[str, Any]] = []
    for i in range(nodes):
        n = copy.deepcopy(template)
        n["metadata"]["name"] = f"n{i:05d}"
        for k in ("capacity", "allocatable"):
            n["status"][k]["nvidia.com/gpu"] = "8"
            n["status"][k]["cpu"] = "64"
        n.setdefault("spec", {})
        if i % 50 == 49:
            n["spec"]["unschedulable"] = True
        if i % 40 == 39:
            n["spec"]["taints"] = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
        out.append(n)
        fill, target = 0, rng.choice((5, 6, 7, 8))
        while fill < target and len(running) < pods * 3 // 4:
            g = rng.choice((1, 1, 2, 4))
            if fill + g > target:
                g = target - fill
            p = _pod(f"r{len(running):06d}", g, 2)
            p["spec"]["nodeName"] = n["metadata"]["name"]
            p["status"] = {"phase": "Running",
                           "startTime": STAMP.format(h=10 + rng.randrange(12), m=rng.randrange(60))}
            running.append(p)
            fill += g
    out += running
    k = 0
    while len(running) + k < pods:
        kind = rng.random()
        if kind < 0.4:
            out.append(_pod(f"w{k:06d}", 8, 8))
            k += 1
        elif kind < 0.7:
            labels = {"jobset.sigs.k8s.io/jobset-name": f"train{k:06d}"}
            out += [_pod(f"w{k:06d}-{j}", 8, 8, labels) for j in range(2)]
            k += 2
        else:
            out.append(_pod(f"w{k:06d}", rng.choice((1, 2, 4)), 4))
            k += 1
    return out
