"""How many of a run's engine cycles could a "provably idle" skip remove at most?

    python bench/skip_potential.py --nodes 300 --jobs 8000 --policy gang-easy

Runs bench/simulate.py's generated workload (90% offered load, leaves of 32) and counts, per
instant at which a cycle runs: instants whose only news is arrivals, and among them those where
every arriving job provably cannot fit the free capacity (``NodeTable.cannot_fit``, the test the
greedy skip uses). The last count bounds what an arrival skip can save for any profile.
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import gpufleet.sim.runner as runner
from gpufleet.model.fleet import NodeGroup, build_fleet
from gpufleet.policies.registry import profile
from gpufleet.sim.kernel import Outcome
from gpufleet.sim.state import SimState
from gpufleet.sim.step import after_instant
from gpufleet.sim.workload import WorkloadSpec, generate, mean_gpu_seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=8000)
    ap.add_argument("--policy", default="gang-easy")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    fleet = build_fleet([NodeGroup(nodes=args.nodes, gpu="H100-80GB", leaf_size=32)])
    spec = WorkloadSpec(offered_load=0.9)
    rate = 0.9 * fleet.total_gpus / mean_gpu_seconds(spec, np.random.default_rng(args.seed + 1))
    days = args.jobs / rate / 86400
    jobs = generate(WorkloadSpec(days=days, offered_load=0.9), fleet.total_gpus, args.seed)
    count = {"cycle_instants": 0, "arrivals_only": 0, "arrivals_only_none_fits": 0}

    def counting(st: SimState, outcome: Outcome) -> None:
        if outcome & (Outcome.CHANGED | Outcome.ARRIVED | Outcome.CYCLE_DUE) and st.cluster.pending:
            count["cycle_instants"] += 1
            if outcome == Outcome.ARRIVED:
                count["arrivals_only"] += 1
                table = st.cluster.table
                if all(len(j.pod_sets) == 1
                       and table.cannot_fit(j.pod_sets[0].request, j.pod_sets[0].replicas)
                       for j in st.arrived_now):
                    count["arrivals_only_none_fits"] += 1
        after_instant(st, outcome)

    runner.after_instant = counting  # the kernel reads it when simulate() builds it
    r = runner.simulate(fleet, jobs, profile(args.policy), horizon=days * 86400)
    print(json.dumps({"nodes": args.nodes, "jobs": len(jobs), "policy": args.policy,
                      "engine_cycles": r.cycles, **count}))


if __name__ == "__main__":
    main()
