"""Slurm vs simulator on several cluster shapes and seeds, with slurm.conf overrides in place.

For each shape (``NODESxGPUS/LEAF``) this brings up the emulated Slurm (tools/slurm-emulated-
cluster.sh, root, its own directory and ports), whose slurm.conf appends and includes overrides
as sites do (the included SchedulerParameters sets bf_interval=2, appended lines change the age
and job-size weights), submits the compare workload of each seed once, and replays that one Slurm
run five ways: the conf read as Slurm reads it (last value wins) with gang best fit, with
select/cons_tres node choice, and with passes at the period slurmctld achieved (sdiag) instead of
exactly bf_interval; and the conf read first-wins (the reader before issue 18) with both node
choices.
Prints one JSON line per (shape, seed, replay) and a markdown table; purges each cluster after.

    sudo .venv/bin/python bench/slurm_compare.py --shapes 8x8/4,12x4/6 --seeds 1,2,3 --jobs 100
    sudo .venv/bin/python bench/slurm_compare.py --shapes 8x8/4 --seeds 1,2,3 --submit held,unheld
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import time
from dataclasses import replace
from pathlib import Path

from gpufleet.adapters.slurm.compare_run import compare_workload, read_cluster, replay, run_on_slurm
from gpufleet.adapters.slurm.reader import SlurmCli

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "slurm-emulated-cluster.sh"
INCLUDED = ("SchedulerParameters=bf_interval=2,bf_continue,bf_resolution=60,bf_window=1440,"
            "bf_max_job_test=1000,default_queue_depth=1000,sched_min_interval=100000\nPriorityWeightAge=500")
APPENDED = "priorityweightage=2000\nPriorityWeightJobSize=1500"


def free_base() -> int:
    for base in range(31000, 60000, 100):
        ok = True
        for port in (base, base + 1, base + 2, *range(base + 11, base + 60)):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise SystemExit("no free port block")


def script(action: str, env: dict[str, str]) -> None:
    done = subprocess.run(["bash", str(SCRIPT), action], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{action} failed: {done.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8x8/4,12x4/6")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--submit", default="held",
                    help="held (sbatch --hold, one scontrol release: what the command does), unheld, or both "
                         "comma-separated: each seed then runs on Slurm once per mode")
    args = ap.parse_args()
    modes = args.submit.split(",")
    if any(m not in ("held", "unheld") for m in modes):
        ap.error(f"--submit: expected held, unheld or held,unheld, got {args.submit!r}")
    shapes = [re.fullmatch(r"([1-9]\d*)x([1-9]\d*)/([1-9]\d*)", s) for s in args.shapes.split(",")]
    if not all(shapes):
        ap.error(f"--shapes: expected NODESxGPUS/LEAF[,...] such as 8x8/4, got {args.shapes!r}")
    if not re.fullmatch(r"\d+(,\d+)*", args.seeds):
        ap.error(f"--seeds: expected whole numbers separated by commas, got {args.seeds!r}")
    if not 1 <= args.jobs <= 100_000:
        ap.error(f"--jobs: expected 1 to 100000, got {args.jobs}")
    rows = []
    for shape, m in zip(args.shapes.split(","), shapes, strict=True):
        assert m is not None
        nodes, gpus, leaf = m.groups()
        base = free_base()
        root = f"/tmp/gpufleet-bench-slurm-{base}"
        env = dict(os.environ, SLURMTEST_DIR=root, SLURMTEST_NODES=nodes, SLURMTEST_GPUS_PER_NODE=gpus,
                   SLURMTEST_NODES_PER_LEAF=leaf, SLURMTEST_ACCOUNTING="slurmdbd", SLURMTEST_CLUSTER="bench",
                   SLURMTEST_INCLUDE_CONF=INCLUDED, SLURMTEST_EXTRA_CONF=APPENDED,
                   SLURMTEST_CTLD_PORT=str(base), SLURMTEST_DBD_PORT=str(base + 1),
                   SLURMTEST_MYSQL_PORT=str(base + 2), SLURMTEST_NODE_PORT_BASE=str(base + 10),
                   SLURM_CONF=f"{root}/etc/slurm.conf")
        script("up", env)
        try:
            conf_path = f"{root}/etc/slurm.conf"
            cli = SlurmCli(conf_path)
            for argv in (["sacctmgr", "-i", "add", "account", "research"],
                         ["sacctmgr", "-i", "add", "user", "root", "account=research"]):
                subprocess.run(argv, env=env, capture_output=True, check=False)
            fleet, conf = read_cluster(conf_path)
            first_wins = replace(conf, settings=tuple(reversed(conf.settings)))
            for seed, mode in ((int(s), m) for s in args.seeds.split(",") for m in modes):
                jobs = compare_workload(args.jobs, seed=seed, max_gpus=int(gpus))
                t0 = time.monotonic()
                run = run_on_slurm(cli, jobs, timeout_s=900, hold=mode == "held")
                variants = [("last-wins", conf, "best-fit", False), ("last-wins", conf, "cons-tres", False),
                            ("last-wins", conf, "best-fit", True),
                            ("first-wins", first_wins, "best-fit", False),
                            ("first-wins", first_wins, "cons-tres", False)]
                for reading, c, nodes, timing in variants:
                    cmp = replay(fleet, c, jobs, run, slurm_nodes=nodes == "cons-tres", pass_timing=timing)
                    a = cmp.agreement
                    passes = f"sdiag {run.bf_period_s:.2f} s" if timing and run.bf_period_s else "bf_interval"
                    row = {"shape": shape, "seed": seed, "submit": mode, "conf": reading, "nodes": nodes,
                           "passes": passes,
                           "jobs": a.jobs, "kendall_tau_b": round(a.kendall_tau_b, 3),
                           "pairs": round(a.pair_agreement, 3),
                           "wait_diff_median_s": round(a.waits.median_abs, 1),
                           "slurm_s": round(time.monotonic() - t0, 1)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                subprocess.run(["scancel", "--user=root"], env=env, capture_output=True, check=False)
        finally:
            script("purge", env)
    print("| shape (nodes×GPUs/leaf) | seed | submit | conf read | nodes | pass cadence | jobs | Kendall tau "
          "| pairs in Slurm's order |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['shape']} | {r['seed']} | {r['submit']} | {r['conf']} | {r['nodes']} | {r['passes']} "
              f"| {r['jobs']} "
              f"| {r['kendall_tau_b']:.3f} | {r['pairs']:.1%} |")


if __name__ == "__main__":
    main()
