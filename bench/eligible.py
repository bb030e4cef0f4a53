"""Cost of the per-job node filter (``Job.eligible_nodes``) in one engine cycle.

One cycle over 2,000 × 8-GPU nodes and a queue of random gangs (1–4 pods of 1, 2, 4 or 8 GPUs),
with every job free to use any node, with each job restricted to one of four node sets of half
the fleet each, and free again (the first run warms caches); same process, same queue. Prints one
JSON line per profile; ``ratio`` is restricted / the faster free run.

    .venv/bin/python bench/eligible.py --pending 20000
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import numpy as np

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pending", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    f = fleet().leaves(50, nodes=40).build()
    names = [n.id for n in f.nodes]
    sets = [frozenset(names[i::4] + names[(i + 1) % 4::4]) for i in range(4)]
    rng = np.random.default_rng(args.seed)
    jobs = [job(f"j{i}").gpus(int(rng.choice([1, 2, 4, 8]))).gang(int(rng.integers(1, 5))).build()
            for i in range(args.pending)]
    restricted = [replace(j, eligible_nodes=sets[i % 4]) for i, j in enumerate(jobs)]
    for name in ("gang-easy", "topology-aware", "gang-fractional"):
        out: dict[str, object] = {"profile": name, "nodes": len(names), "pending": args.pending}
        secs = {}
        for label, queue in (("free", jobs), ("restricted", restricted), ("free_again", jobs)):
            t0 = time.perf_counter()
            r = run_cycle(CycleInput(0.0, NodeTable.from_fleet(f), [PendingJob(j) for j in queue],
                                     profile(name)))
            secs[label] = time.perf_counter() - t0
            out[f"{label}_cycle_s"] = round(secs[label], 3)
            out[f"{label}_started"] = len(r.started)
        out["ratio"] = round(secs["restricted"] / min(secs["free"], secs["free_again"]), 2)
        print(json.dumps(out))


if __name__ == "__main__":
    main()
