"""One scheduling cycle at scale: a fleet ~90% busy and a deep pending queue.

    python bench/cycle.py --nodes 2000 --pending 100000
    python bench/cycle.py --grid            # the scaling table for bench/README.md

Builds N nodes × 8 H100 (leaves of 32) about 90% allocated by running jobs with staggered ends,
and M pending jobs of mixed shapes (1-64 GPUs, as the workload generator draws them) from 16
tenants. Measures, with the EASY-backfill profile (all six phases; ``--profile NAME`` for another, e.g.
topology-aware):
- ``cycle_median_s``: median wall time of one full cycle on that input;
- ``placements_per_s``: jobs started per second of cycle time while the queue drains (after each
  cycle the clock moves to ten minutes past the next job end and every job ending by then
  finishes, so each cycle has room to place into, as a live cluster's does);
- the naive baseline (bench/naive_cycle.py) on the same input, timed at M/10 and scaled ×10 when
  M > 10,000 (it is linear in M), in the same run, for the speed-up;
- ``queue_build_s``: the driver's one-off cost of its ``PendingQueue`` (engine/queue.py): adding
  every job (its columns) and the first priority sort. The cycles and the drain hand the engine
  that queue, as a driver does: a job's columns are read once, on arrival, not every cycle.
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpufleet.engine.cycle import run_cycle  # noqa: E402
from gpufleet.engine.plan import PodBinding  # noqa: E402
from gpufleet.engine.queue import PendingQueue  # noqa: E402
from gpufleet.engine.snapshot import NodeTable  # noqa: E402
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob  # noqa: E402
from gpufleet.model.fleet import NodeGroup, build_fleet  # noqa: E402
from gpufleet.model.ids import JobId, TenantId  # noqa: E402
from gpufleet.model.job import Job, PodRequest, PodSet  # noqa: E402
from gpufleet.policies.registry import profile  # noqa: E402
from naive_cycle import naive_cycle  # noqa: E402

#: The timer every figure reads: wall time, or with ``--cpu-time`` this process's CPU time (on a
#: machine shared with other processes, wall time also counts the waits for a core).
CLOCK = [time.perf_counter]

SIZES = np.array([1, 2, 4, 8, 16, 32, 64])
WEIGHTS = np.array([0.55, 0.1, 0.1, 0.13, 0.06, 0.04, 0.02])


def make_job(i: int, rng: np.random.Generator, t: float, prefix: str) -> Job:
    g = int(rng.choice(SIZES, p=WEIGHTS / WEIGHTS.sum()))
    per = min(g, 8)
    cpg = int(rng.choice([16, 24, 28]))
    run = float(rng.lognormal(np.log(3600), 1.0))
    return Job(JobId(f"{prefix}{i:06d}"), TenantId(f"tenant{int(rng.integers(16)):02d}"),
               (PodSet("w", g // per, PodRequest(per, float(cpg * per), float(200 * per))),),
               submit_time=t, run_time=run, run_time_estimate=run * 1.5)


def build(nodes: int, pending: int, seed: int):
    rng = np.random.default_rng(seed)
    fleet = build_fleet([NodeGroup(nodes=nodes, gpu="H100-80GB", leaf_size=32)])
    table = NodeTable.from_fleet(fleet)
    running: list[RunningJob] = []
    target = int(0.9 * fleet.total_gpus)
    i = 0
    prof = profile("gang-bestfit")
    while table.gpus_allocated < target:
        size = max(1, (target - table.gpus_allocated) // 16)
        batch = [PendingJob(make_job(i + k, rng, -3600.0, "r")) for k in range(size)]
        i += size
        res = run_cycle(CycleInput(-3600.0, table, batch, prof))
        if not res.started:
            break
        by_job: dict[str, list[PodBinding]] = {}
        for b in res.bindings:
            by_job.setdefault(b.job, []).append(b)
            table.take(b.node, b.request)
        jobs = {pj.job.id: pj.job for pj in batch}
        for jid in res.started:
            start = -float(rng.uniform(0, 3600))
            running.append(RunningJob(jobs[jid], start, tuple(by_job[jid])))
    queue = [PendingJob(make_job(k, rng, float(k % 3600), "p")) for k in range(pending)]
    return fleet, table, running, queue


def time_cycles(table, running, queue, reps: int, name: str = "gang-easy") -> tuple[list[float], float]:
    """Cycle times on one input, and the one-off cost of the driver's queue: adding every job
    (its columns) and the first priority sort, which later cycles keep up incrementally."""
    prof = profile(name)
    t0 = CLOCK[0]()
    pq = PendingQueue(queue)
    pq.priority_order()
    queue_s = CLOCK[0]() - t0
    out = []
    for _ in range(reps):
        t0 = CLOCK[0]()
        run_cycle(CycleInput(3600.0, table, pq, prof, running=running))
        out.append(CLOCK[0]() - t0)
    return out, queue_s


def drain(table, running, queue, budget_s: float, name: str = "gang-easy") -> tuple[int, float, int]:
    """Cycles until the queue is empty or ``budget_s`` of cycle time is spent."""
    prof = profile(name)
    table = table.copy()
    running = list(running)
    pending = PendingQueue(queue)  # the driver's queue: columns kept across cycles
    now, placed, spent, cycles = 3600.0, 0, 0.0, 0
    while pending and spent < budget_s:
        t0 = CLOCK[0]()
        res = run_cycle(CycleInput(now, table, pending, prof, running=running))
        spent += CLOCK[0]() - t0
        cycles += 1
        by_job: dict[str, list[PodBinding]] = {}
        for b in res.bindings:
            by_job.setdefault(b.job, []).append(b)
            table.take(b.node, b.request)
        for jid in res.started:
            running.append(RunningJob(pending.remove(jid).job, now, tuple(by_job[jid])))
        placed += len(res.started)
        # Time moves on by ten minutes of running-job ends: those jobs finish and free capacity.
        running.sort(key=lambda r: (r.start_time + r.job.run_time, r.job.id))
        horizon = running[0].start_time + running[0].job.run_time + 600.0 if running else now + 600.0
        cut = next((i for i, r in enumerate(running) if r.start_time + r.job.run_time > horizon),
                   len(running))
        for rj in running[:cut]:
            for b in rj.bindings:
                table.give(b.node, b.request)
        running = running[cut:]
        now = max(now + 1.0, horizon)
    return placed, spent, cycles


def measure(nodes: int, pending: int, seed: int, reps: int, naive: bool, drain_s: float,
            name: str = "gang-easy") -> dict:
    fleet, table, running, queue = build(nodes, pending, seed)
    times, queue_s = time_cycles(table, running, queue, reps, name)
    busy = round(100 * table.gpus_allocated / fleet.total_gpus, 1)
    out = {"profile": name, "nodes": nodes, "pending": pending, "busy_pct": busy, "running": len(running),
           "queue_build_s": round(queue_s, 3), "cycle_median_s": round(statistics.median(times), 4)}
    if naive:
        sample = queue if pending <= 10_000 else queue[: pending // 10]
        t0 = CLOCK[0]()
        naive_cycle(table, sample)
        naive_s = (CLOCK[0]() - t0) * (pending / len(sample))
        out["naive_cycle_median_s"] = round(naive_s, 3)
        if len(sample) < pending:
            out["naive_scaled_from"] = len(sample)
        out["speedup"] = round(naive_s / out["cycle_median_s"], 1)
    if drain_s > 0:
        placed, spent, cycles = drain(table, running, queue, drain_s, name)
        out["placements_per_s"] = round(placed / spent) if spent else 0
        out["drain_cycles"] = cycles
        out["drain_placed"] = placed
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--pending", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--drain-s", type=float, default=600.0,
                    help="cycle-time budget for the drain; the default lets 100,000 jobs drain fully")
    ap.add_argument("--profile", default="gang-easy", metavar="NAME",
                    help="scheduling profile to time (gang-easy, topology-aware, topology-easy, ...)")
    ap.add_argument("--grid", action="store_true", help="cycle time over N x M (no naive, no drain)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time with this process's CPU time instead of the wall clock (a loaded machine)")
    args = ap.parse_args()
    if args.cpu_time:
        CLOCK[0] = time.process_time
    if args.grid:
        rows = []
        for n in (500, 2000, 5000, 10000):
            for m in (1000, 10000, 100000):
                r = measure(n, m, args.seed, 3, naive=False, drain_s=0)
                print(json.dumps(r), file=sys.stderr)
                rows.append(r)
        print(json.dumps({"grid": rows}))
        return
    print(json.dumps(measure(args.nodes, args.pending, args.seed, args.reps, True, args.drain_s,
                             args.profile)))


if __name__ == "__main__":
    main()
