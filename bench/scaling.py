"""Scaling table: one scheduling cycle's cost over fleet size N and queue length M.

    python bench/scaling.py                                  # the full grid, each cell bounded
    python bench/scaling.py --nodes 500 --nodes 2000 --pending 1000 --pending 10000
    python bench/scaling.py --profile 10000 100000          # cProfile of one cycle, top functions

Each cell (N nodes × 8 H100, about 90% busy; M pending jobs of 1-64 GPUs from 16 tenants) is
built by bench/cycle.py's builders and measured in its own process, killed after
``--cell-timeout`` seconds (then "not run (time)", and every larger M of that N is skipped):
- ``cycle_s``: median wall time of ``--reps`` full cycles (profile ``gang-easy``: admit, order,
  place, reserve, backfill, preempt) on the untouched input; ``cycle_cpu_s`` the same in CPU time
  (steadier on a shared machine);
- ``placements_per_s``: jobs started per second of cycle time while the queue drains, for
  ``--drain-s`` seconds of cycle wall time (bench/cycle.py's drain: after each cycle the clock
  moves ten minutes past the next job end); ``placements_per_cpu_s`` the same per CPU second of
  the whole drain (its bookkeeping between cycles included, so slightly pessimistic).
Cells run cheapest first (by N·M); no cell starts after ``--budget-s``, and a cell that timed out
skips every cell at least as large in both N and M. The table shows CPU seconds · placements
per CPU second.
The fit: least squares of log(cycle_cpu_s) = a + b·log N + c·log M over the cells that ran, so
cost grows as N^b · M^c. Last line: one JSON object with the cells and the exponents.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cycle import build, drain  # noqa: E402
from gpufleet.engine.cycle import run_cycle  # noqa: E402
from gpufleet.engine.types import CycleInput  # noqa: E402
from gpufleet.policies.registry import profile  # noqa: E402

NODES = (500, 2_000, 10_000, 50_000)
PENDING = (1_000, 10_000, 100_000, 1_000_000)


def cell(nodes: int, pending: int, seed: int, reps: int, drain_s: float) -> dict:
    t0 = time.perf_counter()
    _, table, running, queue = build(nodes, pending, seed)
    build_s = time.perf_counter() - t0
    prof = profile("gang-easy")
    walls, cpus = [], []
    for _ in range(reps):
        w, c = time.perf_counter(), time.process_time()
        run_cycle(CycleInput(3600.0, table, queue, prof, running=running))
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    c0 = time.process_time()
    placed, spent, cycles = drain(table, running, queue, drain_s)
    drain_cpu = time.process_time() - c0
    return {"nodes": nodes, "pending": pending, "running": len(running), "build_s": round(build_s, 1),
            "cycle_s": round(statistics.median(walls), 4), "cycle_cpu_s": round(statistics.median(cpus), 4),
            "placements_per_s": round(placed / spent) if spent else 0,
            "placements_per_cpu_s": round(placed / drain_cpu) if drain_cpu else 0, "drain_cycles": cycles,
            "drain_placed": placed}


def fit(rows: list[dict]) -> dict:
    """Exponents b, c of cycle_cpu_s ≈ e^a · N^b · M^c (needs ≥ 2 distinct N and M)."""
    ok = [r for r in rows if "cycle_cpu_s" in r]
    if len({r["nodes"] for r in ok}) < 2 or len({r["pending"] for r in ok}) < 2:
        return {}
    x = np.array([[1.0, np.log(r["nodes"]), np.log(r["pending"])] for r in ok])
    y = np.log([max(r["cycle_cpu_s"], 1e-6) for r in ok])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    return {"exponent_nodes": round(float(coef[1]), 2), "exponent_pending": round(float(coef[2]), 2),
            "cells_fitted": len(ok)}


def markdown(rows: list[dict], nodes: list[int], pending: list[int]) -> str:
    by = {(r["nodes"], r["pending"]): r for r in rows}
    out = ["| N \\ M | " + " | ".join(f"{m:,}" for m in pending) + " |",
           "|---|" + "---:|" * len(pending)]
    for n in nodes:
        cells = []
        for m in pending:
            r = by.get((n, m))
            if r is None or "cycle_cpu_s" not in r:
                cells.append(r["note"] if r else "not run")
            else:
                cells.append(f"{r['cycle_cpu_s']:.3g} s · {r['placements_per_cpu_s']:,}/s")
        out.append(f"| {n:,} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def profile_one(nodes: int, pending: int, seed: int, top: int) -> None:
    _, table, running, queue = build(nodes, pending, seed)
    prof = profile("gang-easy")
    run_cycle(CycleInput(3600.0, table, queue, prof, running=running))  # warm the caches
    pr = cProfile.Profile()
    pr.enable()
    run_cycle(CycleInput(3600.0, table, queue, prof, running=running))
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(top)
    pstats.Stats(pr).sort_stats("cumulative").print_stats(top)


def main() -> None:
    ap = argparse.ArgumentParser(description="cycle cost over fleet size and queue length")
    ap.add_argument("--nodes", type=int, action="append", help=f"default: {NODES}")
    ap.add_argument("--pending", type=int, action="append", help=f"default: {PENDING}")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--drain-s", type=float, default=5.0, help="cycle-time budget of each cell's drain")
    ap.add_argument("--cell-timeout", type=float, default=300.0, help="seconds per cell, build included")
    ap.add_argument("--budget-s", type=float, default=900.0,
                    help="no new cell starts after this many seconds; the rest are 'not run (time)'")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cell", type=int, nargs=2, metavar=("N", "M"), help=argparse.SUPPRESS)
    ap.add_argument("--profile", type=int, nargs=2, metavar=("N", "M"),
                    help="cProfile one cycle at N nodes, M pending; print the top functions")
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    if args.cell:
        print(json.dumps(cell(*args.cell, args.seed, args.reps, args.drain_s)))
        return
    if args.profile:
        profile_one(*args.profile, args.seed, args.top)
        return
    nodes, pending = sorted(args.nodes or NODES), sorted(args.pending or PENDING)
    rows: list[dict] = []
    too_big: set[tuple[int, int]] = set()  # (N, M) that timed out: larger M at that N, larger N at that M
    started = time.perf_counter()
    # Cheapest cells first, so that a bounded run fills the table from the small end.
    for n, m in sorted(((n, m) for n in nodes for m in pending), key=lambda c: (c[0] * c[1], c)):
        over = time.perf_counter() - started > args.budget_s
        if over or any(n >= a and m >= b for a, b in too_big):
            rows.append({"nodes": n, "pending": m, "note": "not run (time)"})
            continue
        cmd = [sys.executable, __file__, "--cell", str(n), str(m), "--reps", str(args.reps),
               "--drain-s", str(args.drain_s), "--seed", str(args.seed)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.cell_timeout,
                                  check=True)
            row = json.loads(done.stdout.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            row = {"nodes": n, "pending": m, "note": "not run (time)"}
            too_big.add((n, m))
        except subprocess.CalledProcessError as e:
            row = {"nodes": n, "pending": m, "note": f"failed: {e.stderr.strip().splitlines()[-1]}"}
        print(json.dumps(row), file=sys.stderr, flush=True)
        rows.append(row)
    print(markdown(rows, nodes, pending), file=sys.stderr)
    print(json.dumps({"grid": rows, **fit(rows)}))


if __name__ == "__main__":
    main()
