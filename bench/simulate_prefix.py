"""The large gang-easy simulation's first T simulated days: the proxy for ``bench/simulate.py
--nodes 2000 --jobs 100000`` (a full run is 20 minutes of CPU before this work).

    python bench/simulate_prefix.py --days 4            # CPU per quarter day, cycles, queue, log hash
    python bench/simulate_prefix.py --days 3.4 --profile-from 3.0   # cProfile of the congested window

Same fleet, workload and seed as bench/simulate.py (2,000 × 8 H100, 100,000 jobs at 90% load); the
run is cut at ``--days`` by raising from the progress callback, so its decisions up to then are the
full run's. The fleet fills for ~3 days (≤ 1 ms a cycle, nothing waits); from day ~3 the queue holds
tens of jobs and every cycle reserves and backfills, which is where the full run's time goes. The
printed ``hash`` is a SHA-256 prefix of the event log so far: equal before and after a change means
the same decisions. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import hashlib
import json
import math
import pstats
import resource
import time

import numpy as np

import gpufleet.sim.step as step
from gpufleet.model.fleet import NodeGroup, build_fleet
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.sim.workload import WorkloadSpec, generate, mean_gpu_seconds


class _Stop(Exception):
    pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--policy", default="gang-easy")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--days", type=float, default=4.0, help="stop after this many simulated days")
    ap.add_argument("--profile-from", type=float, default=None, help="cProfile from this simulated day on")
    args = ap.parse_args()
    if not (math.isfinite(args.days) and args.days > 0):
        ap.error(f"--days: expected a positive number of simulated days, got {args.days}")
    if args.profile_from is not None and not (math.isfinite(args.profile_from) and args.profile_from >= 0):
        ap.error(f"--profile-from: expected a simulated day ≥ 0, got {args.profile_from}")
    fleet = build_fleet([NodeGroup(nodes=args.nodes, gpu="H100-80GB", leaf_size=32)])
    rate = 0.9 * fleet.total_gpus / mean_gpu_seconds(WorkloadSpec(offered_load=0.9),
                                                      np.random.default_rng(args.seed + 1))
    days = args.jobs / rate / 86400
    jobs = generate(WorkloadSpec(days=days, offered_load=0.9), fleet.total_gpus, args.seed)

    state: dict = {}
    cycle = step.engine_cycle

    def engine_cycle(st, delta) -> None:  # keep a handle on the state (simulate() returns only at the end)
        state["st"] = st
        cycle(st, delta)

    step.engine_cycle = engine_cycle
    prof = cProfile.Profile()
    mark = {"next": 0.25 * 86400, "cpu": time.process_time(), "cycles": 0, "on": False}

    def progress(t: float) -> None:
        st = state.get("st")
        if t >= mark["next"] and st is not None:
            c = time.process_time()
            print(f"  day {t / 86400:.2f}: cycles {st.cycles - mark['cycles']}, CPU {c - mark['cpu']:.1f} s, "
                  f"pending {len(st.cluster.pending)}, running {len(st.cluster.running)}", flush=True)
            mark.update(cpu=c, cycles=st.cycles)
            mark["next"] += 0.25 * 86400
        if args.profile_from is not None and not mark["on"] and t >= args.profile_from * 86400:
            mark["on"] = True
            prof.enable()
        if t > args.days * 86400:
            raise _Stop

    c0 = time.process_time()
    with contextlib.suppress(_Stop):
        simulate(fleet, jobs, profile(args.policy), horizon=days * 86400, progress=progress)
    cpu = time.process_time() - c0
    prof.disable()
    st = state["st"]
    h = hashlib.sha256()
    for t, kind, job, detail in st.rec.log:
        h.update((json.dumps({"t": t, "event": kind, "job": job, "detail": detail}) + "\n").encode())
    if mark["on"]:
        pstats.Stats(prof).sort_stats(__import__("os").environ.get("SORT","cumulative")).print_stats(int(__import__("os").environ.get("NSTAT","40")))
    print(json.dumps({"days": args.days, "cycles": st.cycles, "carried_cycles": st.carried_cycles,
                      "events": st.events, "sim_cpu_s": round(cpu, 2),
                      "ms_per_cycle": round(cpu / max(st.cycles, 1) * 1000, 3),
                      "max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                      "log_events": len(st.rec.log), "log_sha256": h.hexdigest()[:16]}))


if __name__ == "__main__":
    main()
