"""What-if and explain over the live snapshot, without the web server: their CPU cost alone.

    python bench/whatif_explain.py [--nodes 2000] [--pending 100000] [--explains 200]
                                   [--horizon-s 604800] [--seeds 1] [--full] [--cprofile FILE]
                                   [--baseline-src DIR] [--rounds 2]

The world is bench/serve_load.py's: NODES × 8 H100 in leaves of 32, PENDING jobs of 4–64 GPUs
(the same seeded draws: tenant, run time 1–4 h, GPUs), all submitted at t=0, under the default
profile (gang-easy, no tenancy). One loop tick at t=0 runs the first cycle (it starts what fits)
and publishes the snapshot the API answers from. Then:
1. what-if: ``fork`` for one 8 × 8-GPU shape (serve_load's probe), HORIZON_S ahead, seed 0 (then
   seeds 1 … SEEDS − 1 through ``fork_seeds``); wall and CPU seconds, the probe's wait, the
   simulator's events; with ``--full`` the same what-if run without the early stop too (the
   answer must be equal);
   With ``--baseline-src`` (another checkout's ``src``, e.g. /work/main/src), seed 0's what-if
   runs in child processes, alternately over that source and this one, ROUNDS times each: the
   CPU seconds of each and their ratio, measured in this one run (the machine is shared);
2. explain: EXPLAINS calls of ``explain`` for random pending jobs; p50/p99 (the route adds the
   HTTP and JSON costs on top).
A benchmark, not a test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: ``--src DIR`` (the children of ``--baseline-src``): import gpufleet from there instead.
SRC = sys.argv[sys.argv.index("--src") + 1] if "--src" in sys.argv else str(ROOT / "src")
sys.path.insert(0, SRC)

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
    ap.add_argument("--baseline-src", type=Path, default=None, help="Another checkout's src to compare with.")
    ap.add_argument("--src", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--fork-only", action="store_true", help=argparse.SUPPRESS)
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
    if a.fork_only:
        c = cpu()
        f = fork(snap, prof, Change(), probe, seed=0, horizon_s=a.horizon_s)
        print(json.dumps({"cpu_s": round(cpu() - c, 2), "probe_start": f.probe_start, "started": f.started,
                          "events": f.events}))
        return
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
    if a.baseline_src is not None:
        cpu_s: dict[str, list[float]] = {"baseline": [], "this": []}
        for _ in range(a.rounds):
            for name, src in (("baseline", a.baseline_src), ("this", Path(SRC))):
                args = ["--fork-only", "--src", str(src), "--nodes", str(a.nodes),
                        "--pending", str(a.pending), "--horizon-s", str(a.horizon_s)]
                r = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                                   check=True)
                child = json.loads(r.stdout)
                cpu_s[name].append(child["cpu_s"])
                if (child["probe_start"], child["started"], child["events"]) != (
                        f0.probe_start, f0.started, f0.events):
                    sys.exit(f"{name} answers otherwise: {child}")
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
