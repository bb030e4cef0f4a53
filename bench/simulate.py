"""Simulator throughput: simulated events per second and wall time.

    python bench/simulate.py                       # the bundled default scenario, its three policies
    python bench/simulate.py --nodes 2000 --jobs 100000 --policy gang-bestfit --policy gang-easy
    python bench/simulate.py --policy gang-easy --failure-scale 50   # failures on (fleet_events/failures.py)
    python bench/simulate.py --policy gang-easy --no-decision-log    # without wait/reserve/backfill events
    python bench/simulate.py --nodes 500 --jobs 20000 --policy gang-bestfit --also-failures 1  # off, on

The large case builds 2,000 HGX nodes × 8 GPUs (16,000 GPUs, leaves of 32) and a generated
workload at 90% offered load whose length is chosen so that about ``--jobs`` jobs arrive.
``sim_cpu_s`` is the ``simulate()`` call's CPU time (steadier than wall time on a shared
machine); ``max_rss_mib`` the process's peak resident memory when that policy's run ended.
Last line of output: one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time

import numpy as np

from gpufleet.model.fleet import NodeGroup, build_fleet
from gpufleet.policies.registry import profile
from gpufleet.sim.fleet_events.failures import FailureConfig
from gpufleet.sim.metrics import summarize
from gpufleet.sim.runner import simulate
from gpufleet.sim.scenario import bundled
from gpufleet.sim.workload import WorkloadSpec, generate, mean_gpu_seconds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=0, help="0: the bundled default scenario")
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--policy", action="append")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--failure-scale", type=float, default=0.0,
                    help="failures at this multiple of the Llama 3 rates (0: off)")
    ap.add_argument("--no-decision-log", action="store_true")
    ap.add_argument("--also-failures", type=float, default=0.0,
                    help="run each policy again with failures at this multiple of the Llama 3 rates, "
                         "in the same process (the off/on ratio is what to read on a loaded machine)")
    args = ap.parse_args()
    if args.nodes:
        fleet = build_fleet([NodeGroup(nodes=args.nodes, gpu="H100-80GB", leaf_size=32)])
        spec = WorkloadSpec(offered_load=0.9)
        rate = 0.9 * fleet.total_gpus / mean_gpu_seconds(spec, np.random.default_rng(args.seed + 1))
        days = args.jobs / rate / 86400
        spec = WorkloadSpec(days=days, offered_load=0.9)
        jobs = generate(spec, fleet.total_gpus, args.seed)
        horizon = days * 86400
        label = f"{args.nodes} nodes x 8 GPUs, {len(jobs)} jobs over {days:.1f} days"
    else:
        scn = bundled("default")
        fleet, jobs, horizon = scn.fleet, scn.jobs(), scn.horizon
        label = f"default scenario: {fleet.total_gpus} GPUs, {len(jobs)} jobs"
    out = {"case": label, "nodes": len(fleet), "jobs": len(jobs), "policies": {}}
    runs = [(name, args.failure_scale) for name in args.policy or ["gang-bestfit", "gang-easy", "per-pod"]]
    if args.also_failures > 0:
        runs = [r for name, sc in runs for r in ((name, sc), (f"{name}+failures", args.also_failures))]
    for name, scale in runs:
        failures = FailureConfig(scale=scale) if scale > 0 else None
        c0 = time.process_time()
        r = simulate(fleet, jobs, profile(name.removesuffix("+failures")), horizon=horizon, failures=failures,
                     decision_log=not args.no_decision_log)
        cpu = time.process_time() - c0
        s = summarize(r)
        out["policies"][name] = {
            "events": r.events, "cycles": r.cycles, "carried_cycles": r.carried_cycles,
            "sim_wall_s": round(r.wall_s, 2),
            "sim_cpu_s": round(cpu, 2),
            # peak resident memory of the whole process so far (Linux: KiB), jobs and fleet included
            "max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "events_per_s": round(r.events / r.wall_s), "cycles_per_s": round(r.cycles / r.wall_s),
            "gpu_allocation_pct": round(s["gpu_allocation_pct"], 1),
            "interruptions": s.get("interruptions", 0), "log_events": len(r.recorder.log),
        }
        print(f"{name}: {out['policies'][name]}", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
