"""`gpufleet k8s analyze` on a 4,000-node, 12,000-pod snapshot (issue 29 §3).

The snapshot is a test double built from real objects (gpufleet.testing.k8s_cluster: copies of
the real node `nori`, pods of the device plugin's documented manifest): nodes 60-100 % full of
1/2/4-GPU pods, 3,000 pending pods (8-GPU singles, JobSets of two 8-GPU pods, small pods).

    .venv/bin/python bench/k8s_large.py --nodes 4000 --pods 12000

Prints one JSON line: CPU seconds (time.process_time) to build the snapshot, to analyse it
without the defrag plan and with it, and the plan's size.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from gpufleet.adapters.kubernetes.analyze import analyze
from gpufleet.adapters.kubernetes.snapshot import Snapshot
from gpufleet.testing.k8s_cluster import large_cluster

NODES = Path(__file__).resolve().parents[1] / "tests" / "data" / "k8s" / "nodes-rke2-gpu.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=4000)
    ap.add_argument("--pods", type=int, default=12000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--defrag-method", default="milp", choices=("milp", "greedy"))
    a = ap.parse_args()
    t0 = time.process_time()
    snap = Snapshot()
    for o in large_cluster(json.loads(NODES.read_text())["items"][0], a.nodes, a.pods, a.seed):
        snap.add(o, "bench")
    t1 = time.process_time()
    analyze(snap, defrag=False)
    t2 = time.process_time()
    an = analyze(snap, defrag_method=a.defrag_method)
    t3 = time.process_time()
    d = an.defrag
    print(json.dumps({"nodes": a.nodes, "pods": a.pods, "build_cpu_s": round(t1 - t0, 2),
                      "analyze_no_plan_cpu_s": round(t2 - t1, 2), "analyze_cpu_s": round(t3 - t2, 2),
                      "steps": len(d.steps) if d else 0, "started_gpus": d.started_gpus if d else 0,
                      "displaced_gpu_h": d.displaced_gpu_h if d else 0.0,
                      "stranded": an.totals["stranded"]}))


if __name__ == "__main__":
    main()
