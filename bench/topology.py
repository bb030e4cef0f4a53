"""Topology-blind versus topology-aware placement on the bundled training-heavy scenario.

    python bench/topology.py                 # scenario "training", seed from the file
    python bench/topology.py --seed 3        # another workload draw

Prints the seed case's bandwidth arithmetic (Llama-2-70B, TP=8, one node versus 4 + 4 on two
nodes), then per policy the training-job slowdown (mean, p95), mean JCT and GPU allocation.
Last line of output: one JSON object

    {"split_4x4_slowdown", "blind_jct_mean_s", "aware_jct_mean_s", "jct_ratio", "aware_slowdown_p95",
     "bestfit_jct_mean_s", "blind_slowdown_mean", "aware_slowdown_mean", ...}

with ``jct_ratio = aware / blind`` mean job completion time (targets: split_4x4_slowdown in
[1.7, 2.5], jct_ratio < 0.9).
"""

from __future__ import annotations

import argparse
import json
import time

from gpufleet.policies.registry import profile
from gpufleet.report.topology import lost_gpu_hours, seed_arithmetic, seed_case
from gpufleet.sim.metrics import summarize
from gpufleet.sim.runner import simulate
from gpufleet.sim.runtime import TopologyRuntime
from gpufleet.sim.scenario import bundled

POLICIES = ("topology-blind", "gang-bestfit", "topology-aware")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", default="training")
    ap.add_argument("--seed", type=int, default=None, help="workload seed (default: the scenario's)")
    args = ap.parse_args()

    packed, split = seed_case()
    split_slowdown = split.step_s / packed.step_s
    print(seed_arithmetic())
    print()

    scn = bundled(args.scenario)
    jobs = scn.jobs(args.seed)
    summaries: dict[str, dict] = {}
    print(f"{scn.name}: {scn.fleet.total_gpus} GPUs, {len(jobs):,} jobs, "
          f"leaf oversubscription {scn.fleet.fabric.leaf_oversubscription:g}:1")
    print(f"{'policy':<16}{'slowdown mean':>14}{'p95':>8}{'JCT mean':>11}{'alloc':>8}"
          f"{'GPU-h lost':>12}{'wall':>7}")
    for name in POLICIES:
        t0 = time.perf_counter()
        r = simulate(scn.fleet, jobs, profile(name, scn.fleet.fabric), horizon=scn.horizon,
                     runtime_model=TopologyRuntime(scn.fleet))
        s = summarize(r)
        summaries[name] = s
        print(f"{name:<16}{s['slowdown_mean']:>13.2f}x{s['slowdown_p95']:>7.2f}x"
              f"{s['jct_mean_s'] / 3600:>9.2f} h{s['gpu_allocation_pct']:>7.1f}%"
              f"{lost_gpu_hours(r):>12,.0f}{time.perf_counter() - t0:>6.1f}s")

    blind, bestfit, aware = (summaries[p] for p in POLICIES)
    print(json.dumps({
        "split_4x4_slowdown": round(split_slowdown, 4),
        "blind_jct_mean_s": round(blind["jct_mean_s"], 1),
        "aware_jct_mean_s": round(aware["jct_mean_s"], 1),
        "jct_ratio": round(aware["jct_mean_s"] / blind["jct_mean_s"], 4),
        "aware_slowdown_p95": round(aware["slowdown_p95"], 4),
        "bestfit_jct_mean_s": round(bestfit["jct_mean_s"], 1),
        "blind_slowdown_mean": round(blind["slowdown_mean"], 4),
        "blind_slowdown_p95": round(blind["slowdown_p95"], 4),
        "bestfit_slowdown_mean": round(bestfit["slowdown_mean"], 4),
        "aware_slowdown_mean": round(aware["slowdown_mean"], 4),
        "blind_alloc_pct": round(blind["gpu_allocation_pct"], 2),
        "aware_alloc_pct": round(aware["gpu_allocation_pct"], 2),
    }))


if __name__ == "__main__":
    main()
