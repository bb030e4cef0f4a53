"""What the cluster-wide defrag plan adds to `gpufleet k8s analyze` (adapters/kubernetes/defrag.py).

Synthetic cluster built from the real node `nori` (tests/data/k8s/nodes-rke2-gpu.json), renamed
and given 8 GPUs, N nodes each running one 4-GPU pod (started 1-12 h before the snapshot), and W
waiting 8-GPU pods: no waiting pod fits (4 free GPUs per node) and every one can start after one
move, so the plan has W steps — the worst case for the greedy (every step tries every node).

    .venv/bin/python bench/k8s_defrag.py --nodes 200 --waiting 30

Prints one JSON line: analyze's wall time with and without the plan (same process, same
snapshot: compare the ratio, the machine is shared) and the plan's totals.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

from gpufleet.adapters.kubernetes.analyze import analyze
from gpufleet.adapters.kubernetes.snapshot import Snapshot

NODES = Path(__file__).resolve().parents[1] / "tests" / "data" / "k8s" / "nodes-rke2-gpu.json"


def _pod(name: str, gpus: int) -> dict:
    res = {"nvidia.com/gpu": str(gpus)}
    tolerate = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "t"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": res, "requests": res}}],
                     "tolerations": [tolerate]},
            "status": {"phase": "Pending"}}


def snapshot(nodes: int, waiting: int) -> Snapshot:
    nori = json.loads(NODES.read_text())["items"][0]
    s = Snapshot()
    for i in range(nodes):
        n = copy.deepcopy(nori)
        n["metadata"]["name"] = f"n{i}"
        for k in ("capacity", "allocatable"):
            n["status"][k]["nvidia.com/gpu"] = "8"
            n["status"][k]["cpu"] = "64"
        s.add(n, "bench")
        p = _pod(f"r{i}", 4)
        p["spec"]["nodeName"] = f"n{i}"
        p["status"] = {"phase": "Running", "startTime": f"2025-03-19T{10 + i % 12}:18:09Z"}
        s.add(p, "bench")
    for w in range(waiting):
        s.add(_pod(f"w{w}", 8), "bench")
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--waiting", type=int, default=30)
    a = ap.parse_args()
    snap = snapshot(a.nodes, a.waiting)
    t0 = time.perf_counter()
    analyze(snap, defrag=False)
    t1 = time.perf_counter()
    an = analyze(snap)
    t2 = time.perf_counter()
    d = an.defrag
    print(json.dumps({"nodes": a.nodes, "waiting": a.waiting, "analyze_s": round(t1 - t0, 2),
                      "analyze_with_plan_s": round(t2 - t1, 2), "ratio": round((t2 - t1) / (t1 - t0), 1),
                      "steps": len(d.steps) if d else 0, "started_gpus": d.started_gpus if d else 0,
                      "displaced_gpu_h": d.displaced_gpu_h if d else 0.0}))


if __name__ == "__main__":
    main()
