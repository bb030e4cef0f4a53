"""Sweep throughput: cells per minute in one process, on N local processes, and on a local Ray
cluster of the same N CPUs; Ray's start-up and per-task overhead measured apart.

    python bench/sweep.py                    # the bundled example grid (30 cells, ~1 s each)
    python bench/sweep.py --tiny             # 60 tiny cells (~0.05 s each): overhead dominates
    python bench/sweep.py --workers 2 --json out.json

Every mode runs the same cells into a fresh folder (nothing is reused); rows are checked equal
across modes (timing columns aside). The machine is shared: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from gpufleet.sweep.cell import TIMING_COLUMNS
from gpufleet.sweep.executors import connect_ray
from gpufleet.sweep.run import run_sweep
from gpufleet.sweep.spec import Sweep, bundled_sweep, parse_sweep

TINY = {"name": "tiny", "fleet": {"groups": [{"nodes": 4, "gpu": "H100-80GB", "gpus_per_node": 8}]},
        "workload": {"generator": {"days": 0.05, "offered_load": 0.9, "max_gpus": 16}}}


def tiny_sweep(tmp: Path) -> Sweep:
    import yaml

    (tmp / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    return parse_sweep({"name": "tiny", "scenarios": ["tiny.yaml"],
                        "policies": ["gang-bestfit", "gang-easy", "per-pod"], "seeds": 5,
                        "parameters": {"offered_load": [0.5, 0.9, 1.2, 1.5]}}, "<bench>", tmp)


def timed(sw: Sweep, out: Path, **kw) -> tuple[float, list[dict]]:
    t = time.perf_counter()
    outcome = run_sweep(sw, out, report=False, **kw)
    return time.perf_counter() - t, outcome.rows


def noop() -> int:
    return 0


def ray_task_overhead(ray, n: int = 300) -> float:
    """Seconds per round trip of an empty task, n submitted at once (the floor under every cell)."""
    f = ray.remote(num_cpus=1)(noop)
    ray.get([f.remote() for _ in range(20)])  # warm the workers
    t = time.perf_counter()
    ray.get([f.remote() for _ in range(n)])
    return (time.perf_counter() - t) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tiny", action="store_true", help="tiny cells: measure the overhead per cell")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    sw = tiny_sweep(tmp) if args.tiny else bundled_sweep()
    n = len(sw.cells)
    res: dict = {"grid": sw.spec.name, "cells": n, "workers": args.workers}
    serial_s, rows = timed(sw, tmp / "serial", workers=1)
    res["serial"] = {"wall_s": round(serial_s, 2), "cells_per_min": round(60 * n / serial_s, 1),
                     "cell_s_mean": round(statistics.mean(r["cell_wall_s"] for r in rows), 4)}
    local_s, local_rows = timed(sw, tmp / "local", workers=args.workers)
    res["local_processes"] = {"wall_s": round(local_s, 2), "cells_per_min": round(60 * n / local_s, 1)}
    t = time.perf_counter()
    ray = connect_ray("local", args.workers)
    start_s = time.perf_counter() - t
    ray_s, ray_rows = timed(sw, tmp / "ray", ray_address="local", workers=args.workers)
    again_s, _ = timed(sw, tmp / "ray2", ray_address="local", workers=args.workers)
    res["ray"] = {"start_s": round(start_s, 2), "wall_s_first": round(ray_s, 2),
                  "wall_s_warm": round(again_s, 2), "cells_per_min_warm": round(60 * n / again_s, 1),
                  "cells_per_min_with_start": round(60 * n / (start_s + ray_s), 1),
                  "task_overhead_ms": round(1000 * ray_task_overhead(ray), 2)}
    ray.shutdown()

    def strip(rs: list[dict]) -> list[dict]:
        return [{k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in rs]

    res["identical_rows"] = strip(rows) == strip(local_rows) == strip(ray_rows)
    print(json.dumps(res))
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
