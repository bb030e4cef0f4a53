"""Compare policies with FGD's published figures on the openb traces, paired per seed.

    .venv/bin/python bench/fragbench.py [--policy fgd --policy fgdres ...]
                                        [--traces referenced|unreferenced|all|default,gpuspec20]
                                        [--seeds 42-51] [--markdown] [--json FILE]

Prints, per trace, each policy's unallocated GPU % at arrived = 100 % (mean ± std over the seeds),
the published mean (experiments/analysis/expected_results of the authors' simulator) where there is
one, and seconds per policy x trace (all seeds): wall clock, and in brackets this process's CPU
time, which other jobs on a shared machine inflate much less than the wall clock. With two or more
policies the last one is compared with the first *per seed* (same seed = same node order and same
arrivals): the mean ± std of the per-seed difference (last − first, negative = the last policy leaves less GPU
unallocated), how many seeds it wins, and its worst seed. `--json` keeps every per-seed value.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from gpufleet.policies.fgd import OURS, POLICIES
from gpufleet.studies.fragbench import Workload, run_policy
from gpufleet.traces.openb import read_nodes, read_pods

#: The shared data sits beside the checkout (../shared), as on every developer's machine and CI.
SHARED = Path(__file__).resolve().parents[2] / "shared"
DATA = SHARED / "data" / "openb"
REFERENCE = SHARED / "data" / "openb-reference" / "fgd_allo.csv"
PUBLISHED_NAME = {"01-Random": "random", "02-DotProd": "dotprod", "03-GpuClustering": "gpuclustering",
                  "04-GpuPacking": "gpupacking", "05-BestFit": "bestfit", "06-FGD": "fgd"}


def published(path: Path = REFERENCE) -> dict[str, dict[str, float]]:
    """trace -> policy -> mean over seeds of 100 - allocation % at arrived 100 %."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    with path.open() as fh:
        for row in csv.DictReader(fh):
            trace = row["workload"].removeprefix("openb_pod_list_")
            values[(trace, PUBLISHED_NAME[row["sc_policy"]])].append(100.0 - float(row["100"]))
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (trace, policy), v in values.items():
        out[trace][policy] = float(np.mean(v))
    return dict(out)


def select_traces(arg: str, ref: dict[str, dict[str, float]]) -> list[str]:
    """'referenced' (default), 'unreferenced', 'all', or a comma-separated list of trace names."""
    present = sorted(p.name.removeprefix("openb_pod_list_").removesuffix(".csv")
                     for p in DATA.glob("openb_pod_list_*.csv"))
    referenced = [t for t in present if t in ref]
    unreferenced = [t for t in present if t not in ref]
    groups = {"referenced": referenced, "unreferenced": unreferenced, "all": referenced + unreferenced}
    return groups.get(arg, arg.split(","))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", action="append", help=f"default: fgd and {OURS}")
    ap.add_argument("--traces", default="referenced",
                    help="referenced (default), unreferenced, all, or comma-separated names")
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    ap.add_argument("--json", type=Path, help="write per-seed values and timings here")
    args = ap.parse_args()
    lo, _, hi = args.seeds.partition("-")
    seeds = list(range(int(lo), int(hi or lo) + 1))
    ref = published()
    traces = select_traces(args.traces, ref)
    policies = args.policy or ["fgd", OURS]
    paired = len(policies) >= 2
    nodes = read_nodes(DATA / "openb_node_list_gpu_node.csv")
    pub_names = [p for p in policies if p in PUBLISHED_NAME.values()]
    header = ["trace", *policies, *[f"{p} published" for p in pub_names]]
    if paired:
        header += [f"{policies[-1]} − {policies[0]} per seed", "seeds won", "worst seed"]
    header.append("s (" + "/".join(policies) + ")")
    print("| " + " | ".join(header) + " |" if args.markdown else "\t".join(header))
    if args.markdown:
        print("|" + "---|" * len(header))
    record: dict[str, dict[str, object]] = {}
    for trace in traces:
        work = Workload(nodes, read_pods(DATA / f"openb_pod_list_{trace}.csv"))
        cells, secs, cpu_secs, per_seed = [trace], [], [], {}
        for name in policies:
            start = time.perf_counter()
            res = run_policy(work, POLICIES[name], seeds, clock=time.process_time)
            secs.append(time.perf_counter() - start)
            cpu_secs.append(res.seconds)
            s = res.summary()
            cells.append(f"{s['unallocated_pct_at_100']:.2f} ± {s['unallocated_std']:.2f}")
            per_seed[name] = res.unallocated_at_100
        cells += [f"{ref[trace][p]:.2f}" if p in ref.get(trace, {}) else "—" for p in pub_names]
        if paired:
            diff = per_seed[policies[-1]] - per_seed[policies[0]]
            std = float(diff.std(ddof=1)) if len(diff) > 1 else 0.0
            cells += [f"{diff.mean():+.2f} ± {std:.2f}", f"{int((diff < 0).sum())}/{len(diff)}",
                      f"{diff.max():+.2f}"]
        cells.append("/".join(f"{w:.0f} ({c:.0f})" for w, c in zip(secs, cpu_secs, strict=True)))
        print("| " + " | ".join(cells) + " |" if args.markdown else "\t".join(cells), flush=True)
        record[trace] = {"seeds": seeds, "wall_seconds": dict(zip(policies, secs, strict=True)),
                         "cpu_seconds": dict(zip(policies, cpu_secs, strict=True)),
                         "unallocated_pct_at_100": {k: [round(float(x), 4) for x in v]
                                                    for k, v in per_seed.items()},
                         "published": ref.get(trace, {})}
        if args.json:
            args.json.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
