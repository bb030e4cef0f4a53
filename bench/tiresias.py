"""Side by side with Tiresias's simulator (NSDI'19) on a Philly trace: wall time and agreement.

    python bench/tiresias.py --tiresias /tmp/tiresias/simulator \\
        --python2 ~/.pyenv/versions/2.7.18/bin/python

Tiresias is not part of this repository: clone github.com/SymbioticLab/Tiresias yourself (its
``simulator/`` needs Python 2.7; see bench/README.md). For each cluster size (``--nodes``,
default 32 = the congested setting of VC b436b2, and 256 = the same trace on an 8× larger,
mostly idle cluster) and each rule pair:

- Tiresias ``fjf`` (fit-job-first: FIFO order, any job that fits starts) vs our ``gang-bestfit``;
- Tiresias ``fifo`` (strict: stop at the first job that does not fit) vs our ``gang-fifo``;

both with Tiresias's ``count`` placement (free GPU counting) and our jobs as gangs of one-GPU
pods (bench/philly_to_tiresias.py), so the rules match exactly. Wall time: Tiresias's whole
process (it reads the CSV and logs as it goes; ~0.05 s of it is interpreter start) against our
``simulate()`` call, measured one after the other in the same run; on a shared machine the CPU
time (user + sys of Tiresias's process, ``process_time`` of ours) is the steadier figure, so
``speedup_vs_tiresias`` is the CPU-time ratio and ``wall_ratio`` the wall-time one.
Agreement: the share of jobs whose start times are equal, the largest start-time difference,
and the mean JCT of each.
Last line: one JSON object; ``speedup_vs_tiresias`` is Tiresias's CPU time / ours (> 1: ours is
faster; the issue's target is ≥ 10).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpufleet.model.fleet import NodeGroup, build_fleet  # noqa: E402
from gpufleet.policies.registry import profile  # noqa: E402
from gpufleet.sim.runner import simulate  # noqa: E402
from philly_to_tiresias import job_id, read_philly, to_jobs, write_tiresias  # noqa: E402

RULES = {"fjf": "gang-bestfit", "fifo": "gang-fifo"}
DEFAULT_TRACE = Path("/work/shared/data/philly-vc/trace_b436b2.csv")


def run_tiresias(sim_dir: Path, python2: str, trace: Path, spec: Path, rule: str, log: Path,
                 timeout: float) -> tuple[float, float, dict[int, tuple[int, int]]]:
    """Wall seconds, CPU seconds and {job index: (start, end)} from Tiresias's job.csv."""
    cmd = [python2, "run_sim.py", f"--cluster_spec={spec}", "--scheme=count",
           f"--trace_file={trace}", f"--schedule={rule}", f"--log_path={log}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=sim_dir, check=True, timeout=timeout, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYENV_VERSION": os.environ.get("PYENV_VERSION", "2.7.18")})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    out: dict[int, tuple[int, int]] = {}
    with (log / "job.csv").open(newline="") as fh:
        for row in csv.reader(fh):
            if row and row[0].lstrip("-").isdigit():
                # event_time, job_id, num_gpu, submit_time, start_time, end_time, ...
                out[int(row[1])] = (int(row[4]), int(row[5]))
    return wall, cpu, out


def interpreter(python: str) -> str:
    """``python``'s implementation and version, as the ratios name it (Tiresias runs 1.0–1.8×
    faster on 3.11 than on 2.7, so a ratio without its interpreters says little)."""
    env = {**os.environ, "PYENV_VERSION": os.environ.get("PYENV_VERSION", "2.7.18")}
    code = "import platform; print(platform.python_implementation() + ' ' + platform.python_version())"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, timeout=60,
                         env=env)
    return out.stdout.strip()


def compare(nodes: int, rule: str, args: argparse.Namespace, work: Path) -> dict:
    trace_jobs = read_philly(args.trace)
    trace, spec = write_tiresias(trace_jobs, nodes, work / f"in-{nodes}")
    t_wall, t_cpu, theirs = run_tiresias(args.tiresias, args.python2, trace, spec, rule,
                                  work / f"log-{nodes}-{rule}", args.timeout)
    fleet = build_fleet([NodeGroup(nodes=nodes, gpu="H100-80GB", leaf_size=nodes)])
    jobs = to_jobs(trace_jobs, "count")
    t0, c0 = time.perf_counter(), time.process_time()
    r = simulate(fleet, jobs, profile(RULES[rule]), horizon=float(trace_jobs[-1].submit))
    o_wall, o_cpu = time.perf_counter() - t0, time.process_time() - c0
    ours_start = np.array([r.starts.get(job_id(j.index), np.nan) for j in trace_jobs])
    their_start = np.array([theirs.get(j.index, (np.nan, 0))[0] for j in trace_jobs], float)
    submit = np.array([j.submit for j in trace_jobs], float)
    dur = np.array([j.duration for j in trace_jobs], float)
    both = ~np.isnan(ours_start) & ~np.isnan(their_start)
    diff = np.abs(ours_start[both] - their_start[both])
    return {
        "nodes": nodes, "gpus": nodes * 8, "rule": f"tiresias {rule} = {RULES[rule]}",
        "tiresias_interpreter": args.their_python, "ours_interpreter": args.our_python,
        "jobs": len(trace_jobs), "tiresias_finished": len(theirs),
        "ours_started": int((~np.isnan(ours_start)).sum()),
        "tiresias_wall_s": round(t_wall, 2), "ours_wall_s": round(o_wall, 2),
        "tiresias_cpu_s": round(t_cpu, 2), "ours_cpu_s": round(o_cpu, 2), "ours_cycles": r.cycles,
        "speedup_vs_tiresias": round(t_cpu / o_cpu, 2), "wall_ratio": round(t_wall / o_wall, 2),
        "same_start_pct": round(100 * float((diff == 0).mean()), 2) if both.any() else 0.0,
        "max_start_diff_s": float(diff.max()) if both.any() else None,
        "mean_jct_s": {"tiresias": round(float((their_start[both] + dur[both] - submit[both]).mean())),
                       "ours": round(float((ours_start[both] + dur[both] - submit[both]).mean()))},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description="gpufleet vs Tiresias's simulator on a Philly trace")
    ap.add_argument("--tiresias", type=Path, required=True, help="Tiresias's simulator/ directory")
    ap.add_argument("--python2", default="python2.7",
                    help="the interpreter Tiresias runs on (Python 2.7; named in every ratio)")
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--nodes", type=int, action="append", help="default: 32 and 256")
    ap.add_argument("--rule", choices=sorted(RULES), action="append", help="default: fjf and fifo")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per Tiresias run")
    args = ap.parse_args()
    if not (args.tiresias / "run_sim.py").is_file():
        sys.exit(f"{args.tiresias}: no run_sim.py (expected Tiresias's simulator/ directory)")
    args.their_python = interpreter(args.python2)
    args.our_python = interpreter(sys.executable)
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for nodes in args.nodes or [32, 256]:
            for rule in args.rule or ["fjf", "fifo"]:
                c = compare(nodes, rule, args, Path(tmp))
                print(json.dumps(c), file=sys.stderr, flush=True)
                cases.append(c)
    print(json.dumps({"trace": args.trace.name, "cases": cases,
                      "interpreters": {"tiresias": args.their_python, "ours": args.our_python},
                      "speedup_vs_tiresias": {
                          f"{c['nodes']}x8 {c['rule'].split()[1]} (Tiresias on {args.their_python}, "
                          f"ours on {args.our_python})": c["speedup_vs_tiresias"] for c in cases}}))


if __name__ == "__main__":
    main()
