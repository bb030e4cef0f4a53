"""Greedy vs MILP defrag plans (adapters/kubernetes/defrag.py, defrag_milp.py) on the same
clusters: GPUs started, GPU-hours moved, GPU-hours moved per GPU started, and plan time.

Clusters are built from the real node ``nori`` (tests/data/k8s/nodes-rke2-gpu.json), renamed and
given 8 GPUs; each node runs seeded-random 1-, 2- and 4-GPU pods (started 1-12 h before the
snapshot) to a seeded fill of 50-90 %; the queue holds single 8-GPU pods and JobSets of two
8-GPU pods (``--mig`` instead gives every node the mixed-strategy layout 3g.40gb + 4g.40gb and
pods asking one instance of either profile; the waiting ones select the even nodes' label
``pool: x``, the running ones may go anywhere — without such a constraint a MIG move never
helps: the free instance a moved pod would take could take the waiting pod directly).

    .venv/bin/python bench/k8s_defrag_compare.py --nodes 16 --seeds 10
    .venv/bin/python bench/k8s_defrag_compare.py --nodes 64 --seeds 5

Prints one JSON line per seed and a summary line (sums over seeds). Compare within a run: the
machine is shared.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import time
from pathlib import Path

from gpufleet.adapters.kubernetes.analyze import analyze
from gpufleet.adapters.kubernetes.snapshot import Snapshot

NODES = Path(__file__).resolve().parents[1] / "tests" / "data" / "k8s" / "nodes-rke2-gpu.json"
TOL = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def _pod(name: str, res: dict, labels: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "t", "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "resources": {"limits": res, "requests": res}}],
                     "tolerations": [TOL]},
            "status": {"phase": "Pending"}}


def _running(rng: random.Random) -> dict:
    return {"phase": "Running", "startTime": f"2025-03-19T{23 - rng.randint(1, 12):02d}:18:09Z"}


def cluster(nodes: int, seed: int, mig: bool) -> Snapshot:
    rng = random.Random(seed)
    nori = json.loads(NODES.read_text())["items"][0]
    s = Snapshot()
    k = 0
    for i in range(nodes):
        n = copy.deepcopy(nori)
        n["metadata"]["name"] = f"n{i}"
        n["metadata"]["labels"]["pool"] = "xy"[i % 2]
        for key in ("capacity", "allocatable"):
            n["status"][key]["cpu"] = "64"
            if mig:
                n["status"][key].pop("nvidia.com/gpu", None)
                n["status"][key].update({"nvidia.com/mig-3g.40gb": "1", "nvidia.com/mig-4g.40gb": "1"})
            else:
                n["status"][key]["nvidia.com/gpu"] = "8"
        s.add(n, "bench")
        if mig:
            for prof in ("3g.40gb", "4g.40gb"):
                if rng.random() < 0.9:
                    p = _pod(f"r{k}", {f"nvidia.com/mig-{prof}": "1"})
                    p["spec"]["nodeName"] = f"n{i}"
                    p["status"] = _running(rng)
                    s.add(p, "bench")
                    k += 1
            continue
        used, target = 0, rng.choice([4, 5, 6, 7])
        while used < target:
            g = rng.choice([1, 2, 4])
            if used + g > 8:
                break
            p = _pod(f"r{k}", {"nvidia.com/gpu": str(g)})
            p["spec"]["nodeName"] = f"n{i}"
            p["status"] = _running(rng)
            s.add(p, "bench")
            used += g
            k += 1
    for w in range(max(2, nodes // 4)):
        if mig:
            p = _pod(f"w{w}", {f"nvidia.com/mig-{rng.choice(['3g.40gb', '4g.40gb'])}": "1"})
            p["spec"]["nodeSelector"] = {"pool": "x"}
            s.add(p, "bench")
        elif rng.random() < 0.5:
            s.add(_pod(f"w{w}", {"nvidia.com/gpu": "8"}), "bench")
        else:
            for j in range(2):
                s.add(_pod(f"w{w}-{j}", {"nvidia.com/gpu": "8"}, {"jobset.sigs.k8s.io/jobset-name": f"w{w}"}),
                      "bench")
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--mig", action="store_true")
    a = ap.parse_args()
    total = {m: {"started": 0.0, "moved_gpu_h": 0.0, "plan_s": 0.0} for m in ("greedy", "milp")}
    better = 0
    for seed in range(a.seeds):
        snap = cluster(a.nodes, seed, a.mig)
        line: dict = {"seed": seed}
        t0 = time.perf_counter()
        analyze(snap, defrag=False)
        base = time.perf_counter() - t0
        for m in ("greedy", "milp"):
            t0 = time.perf_counter()
            d = analyze(snap, defrag_method=m).defrag
            dt = time.perf_counter() - t0 - base
            started, moved = (d.started_gpus, d.displaced_gpu_h) if d else (0.0, 0.0)
            line[m] = {"started_gpus": round(started, 3), "moved_gpu_h": moved,
                       "gpu_h_per_gpu": round(moved / started, 3) if started else None,
                       "plan_s": round(dt, 2), "optimal": d.optimal if d else None,
                       "bound_gpus": d.bound_gpus if d else None}
            total[m]["started"] += started
            total[m]["moved_gpu_h"] += moved
            total[m]["plan_s"] += dt
        g, o = line["greedy"], line["milp"]
        better += (o["started_gpus"] > g["started_gpus"] + 1e-9 or (
            abs(o["started_gpus"] - g["started_gpus"]) < 1e-9 and o["moved_gpu_h"] < g["moved_gpu_h"] - 1e-9))
        print(json.dumps(line))
    summary = {m: {"started_gpus": round(v["started"], 3), "moved_gpu_h": round(v["moved_gpu_h"], 2),
                   "gpu_h_per_gpu": round(v["moved_gpu_h"] / v["started"], 3) if v["started"] else None,
                   "plan_s": round(v["plan_s"], 2)} for m, v in total.items()}
    print(json.dumps({"nodes": a.nodes, "seeds": a.seeds, "mig": a.mig, "milp_strictly_better_in": better,
                      **summary}))


if __name__ == "__main__":
    main()
