"""What-if and explain over the live snapshot, without the web server: their CPU cost alone.

    python bench/whatif_explain.py [--nodes 2000] [--pending 100000] [--explains 200]
                                   [--horizon-s 604800] [--seeds 1] [--full] [--cprofile FILE]
                                   [--baseline OLD_WHATIF.py] [--rounds 2]

The world is bench/serve_load.py's: NODES × 8 H100 in leaves of 32, PENDING jobs of 4–64 GPUs
(the same seeded draws: tenant, run time 1–4 h, GPUs), all submitted at t=0, under the default
profile (gang-easy, no tenancy). One loop tick at t=0 runs the first cycle (it starts what fits)
and publishes the snapshot the API answers from. Then:
1. what-if: ``fork`` for one 8 × 8-GPU shape (serve_load's probe), HORIZON_S ahead, seed 0 (then
   seeds 1 … SEEDS − 1 through ``fork_seeds``); wall and CPU seconds, the probe's wait, the
   simulator's events; with ``--full`` the same what-if run without the early stop too (the
   answer must be equal);
   With ``--baseline`` (another version of live/whatif.py, e.g. ``git show
   main:src/gpufleet/live/whatif.py > /tmp/old_whatif.py``), its ``fork`` and this tree's run on
   the same snapshot in turn, ROUNDS times each, in this one process: CPU seconds of each and
   their ratio (the machine is shared: a ratio from one run, not two);
2. explain: EXPLAINS calls of ``explain`` for random pending jobs; p50/p99 (the route adds the
   HTTP and JSON costs on top).
A benchmark, not a test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpufleet.live.explain import explain  # noqa: E402
from gpufleet.live.loop import LiveLoop  # noqa: E402
from gpufleet.live.virtual import VirtualSource  # noqa: E402
from gpufleet.live.whatif import Change, fork, fork_seeds  # noqa: E402
from gpufleet.model.fleet_config import load_fleet  # noqa: E402
from gpufleet.policies.registry import profile  # noqa: E402
from gpufleet.service.jobs import build_job, parse_submission  # noqa: E402


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


def world(nodes: int, pending: int) -> LiveLoop:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "fleet.yaml"
        path.write_text(f"fleet:\n  name: bench\n  groups:\n    - {{nodes: {nodes}, gpu: H100-80GB, "
                        "gpus_per_node: 8, leaf_size: 32}\n")
        fl = load_fleet(path)
    src = VirtualSource(fl, profile("gang-easy", fl.fabric))
    rng = random.Random(7)  # serve_load.prepare's draws, in its order
    for i in range(pending):
        gpus = rng.choice((4, 8, 16, 32, 64))
        body = {"id": f"p{i:06d}", "tenant": rng.choice(("research", "product", "vision")),
                "run_time": rng.choice((3600, 7200, 14400)),
                "pod_sets": [{"replicas": max(1, gpus // 8), "gpus": min(gpus, 8)}]}
        src.submit(build_job(parse_submission(body), body["id"], 0.0), 0.0)
    loop = LiveLoop(src, clock=lambda: 0.0, duty=0.0)
    loop.tick()
    return loop


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--pending", type=int, default=100_000)
    ap.add_argument("--explains", type=int, default=200)
    ap.add_argument("--horizon-s", type=float, default=7 * 86400.0)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--full", action="store_true", help="Also run the what-if without the early stop.")
    ap.add_argument("--cprofile", type=Path, default=None, help="Write seed 0's cProfile stats here.")
    ap.add_argument("--baseline", type=Path, default=None, help="Another live/whatif.py to compare with.")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    load0 = os.getloadavg()[0]
    t = time.perf_counter()
    loop = world(a.nodes, a.pending)
    snap = loop.snapshot()
    build_s = time.perf_counter() - t
    prof = loop.source.profile
    probe = build_job(parse_submission({"id": "whatif-probe", "run_time": 3600,
                                        "pod_sets": [{"replicas": 8, "gpus": 8}]}), "whatif-probe", snap.now)
    out: dict = {"nodes": a.nodes, "pending": len(snap.pending), "running": len(snap.running),
                 "build_s": round(build_s, 1), "first_cycle_s": round(loop.last.duration_s, 2)}
    pr = cProfile.Profile() if a.cprofile is not None else None
    t, c = time.perf_counter(), cpu()
    if pr is not None:
        pr.enable()
    f0 = fork(snap, prof, Change(), probe, seed=0, horizon_s=a.horizon_s)
    if pr is not None:
        pr.disable()
        pr.dump_stats(str(a.cprofile))
    out["whatif_seed0"] = {"wall_s": round(time.perf_counter() - t, 2), "cpu_s": round(cpu() - c, 2),
                           "wait_s": None if f0.probe_start is None else f0.probe_start - snap.now,
                           "events": f0.events, "pending_started": f0.started}
    if a.full:
        t, c = time.perf_counter(), cpu()
        ff = fork(snap, prof, Change(), probe, seed=0, horizon_s=a.horizon_s, early_stop=False)
        out["whatif_seed0_full"] = {"wall_s": round(time.perf_counter() - t, 2),
                                    "cpu_s": round(cpu() - c, 2), "equal": ff.probe_start == f0.probe_start,
                                    "events": ff.events, "pending_started": ff.started}
    if a.baseline is not None:
        spec = importlib.util.spec_from_file_location("baseline_whatif", a.baseline)
        assert spec is not None and spec.loader is not None
        old = importlib.util.module_from_spec(spec)
        sys.modules["baseline_whatif"] = old  # dataclasses look their module up
        spec.loader.exec_module(old)
        cpu_s: dict[str, list[float]] = {"baseline": [], "this": []}
        for _ in range(a.rounds):
            for name, fn, change in (("baseline", old.fork, old.Change()), ("this", fork, Change())):
                c = cpu()
                f = fn(snap, prof, change, probe, seed=0, horizon_s=a.horizon_s)
                cpu_s[name].append(round(cpu() - c, 2))
                assert (f.probe_start, f.started, f.events) == (f0.probe_start, f0.started, f0.events)
        out["versus_baseline"] = {**cpu_s, "ratio": round(min(cpu_s["baseline"]) / min(cpu_s["this"]), 2)}
    if a.seeds > 1:
        t = time.perf_counter()
        fs = fork_seeds(snap, prof, Change(), probe, a.seeds, horizon_s=a.horizon_s)
        out["whatif_seeds"] = {"seeds": a.seeds, "wall_s": round(time.perf_counter() - t, 2),
                               "waits_s": [None if f.probe_start is None else f.probe_start - snap.now
                                           for f in fs]}
    rng = random.Random(3)
    ids = [f"p{rng.randrange(a.pending):06d}" for _ in range(a.explains)]
    lat = []
    for jid in ids:
        t = time.perf_counter()
        explain(snap, jid)
        lat.append(time.perf_counter() - t)
    out["explain"] = {"n": len(lat), "first_ms": round(lat[0] * 1e3, 2) if lat else None,
                      "p50_ms": round(pct(lat, 50) * 1e3, 2), "p99_ms": round(pct(lat, 99) * 1e3, 2)}
    out["load_average"] = [round(load0, 1), round(os.getloadavg()[0], 1)]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
