"""Compare policies with FGD's published figures on every openb trace that has a reference.

    .venv/bin/python bench/fragbench.py [--policy fgd --policy fgdbal ...] [--traces default,gpuspec20]
                                        [--seeds 42-51] [--markdown]

Prints, per trace, our mean unallocated GPU % at arrived = 100 % (seeds 42..51), the published mean
(experiments/analysis/expected_results of the authors' simulator) and seconds per policy x trace.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from gpufleet.policies.fgd import OURS, POLICIES
from gpufleet.sim.fragbench import Workload, run_policy
from gpufleet.traces.openb import read_nodes, read_pods

DATA = Path("/work/shared/data/openb")
REFERENCE = Path("/work/shared/data/openb-reference/fgd_allo.csv")
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", action="append", help=f"default: fgd and {OURS}")
    ap.add_argument("--traces", help="comma-separated, default: every trace with a reference")
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args()
    lo, _, hi = args.seeds.partition("-")
    seeds = list(range(int(lo), int(hi or lo) + 1))
    ref = published()
    traces = args.traces.split(",") if args.traces else sorted(ref)
    policies = args.policy or ["fgd", OURS]
    nodes = read_nodes(DATA / "openb_node_list_gpu_node.csv")
    header = ["trace", *[f"{p} (ours)" for p in policies], *[f"{p} published" for p in policies if p in
                                                              PUBLISHED_NAME.values()], "s/policy"]
    print("| " + " | ".join(header) + " |" if args.markdown else "\t".join(header))
    if args.markdown:
        print("|" + "---|" * len(header))
    for trace in traces:
        work = Workload(nodes, read_pods(DATA / f"openb_pod_list_{trace}.csv"))
        ours, secs = [], []
        for name in policies:
            res = run_policy(work, POLICIES[name], seeds, clock=time.perf_counter)
            s = res.summary()
            ours.append(f"{s['unallocated_pct_at_100']:.2f} ± {s['unallocated_std']:.2f}")
            secs.append(res.seconds)
        pub = [f"{ref.get(trace, {}).get(p, float('nan')):.2f}"
               for p in policies if p in PUBLISHED_NAME.values()]
        cells = [trace, *ours, *pub, "/".join(f"{s:.0f}" for s in secs)]
        print("| " + " | ".join(cells) + " |" if args.markdown else "\t".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
