"""Philly per-VC trace -> Tiresias's simulator input, and the same jobs as gpufleet Jobs.

    python bench/philly_to_tiresias.py /work/shared/data/philly-vc/trace_b436b2.csv \\
        --nodes 32 --out /tmp/tiresias-in

writes ``<out>/trace.csv`` (Tiresias's columns: job_id, num_gpu, submit_time, iterations,
model_name, duration, interval) and ``<out>/cluster.csv`` (one switch of ``--nodes`` nodes × 8
GPUs). Both simulators read the same integers: submit time and duration are truncated to whole
seconds here, as Tiresias's reader does (``int(float(duration))``), so start times can agree
exactly.

The Philly columns (see the data's PROVENANCE.md): ``num_jobs`` is the job's GPU count,
``service`` its run time in seconds. ``model_name`` is a synthetic label; Tiresias uses the model
only for CPU/GPU-memory and tensor sizes, which its ``count`` placement ignores, so every job is
written as ``resnet50``.

Our side (``to_jobs``): with ``shape="count"`` a g-GPU job is a gang of g one-GPU pods, so gang
placement is all-or-nothing on the free GPU count (Tiresias's ``count`` scheme); with
``shape="node"`` it is one pod of g GPUs when g ≤ 8, else g/8 pods of 8 (Tiresias's ``yarn``
scheme packs the same way, but first-fit where we are best-fit).
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import dataclass
from pathlib import Path

from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet

GPUS_PER_NODE = 8
#: Tiresias's node CPU count and memory (GB) in its n32g4/cluster_spec examples; unused by `count`.
CPUS_PER_NODE, MEM_PER_NODE = 128, 256


@dataclass(frozen=True)
class TraceJob:
    index: int
    gpus: int
    submit: int
    duration: int


def read_philly(path: Path) -> list[TraceJob]:
    """The trace's jobs in file order (which is submit order), seconds truncated to integers."""
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    need = {"submit_time", "service", "num_jobs"}
    if not rows or not need <= set(rows[0]):
        raise ValueError(f"{path}: expected columns {sorted(need)}")
    return [TraceJob(i, int(r["num_jobs"]), int(float(r["submit_time"])), int(float(r["service"])))
            for i, r in enumerate(rows)]


def write_tiresias(jobs: list[TraceJob], nodes: int, out: Path) -> tuple[Path, Path]:
    """Tiresias's trace and cluster-spec CSVs under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    trace, spec = out / "trace.csv", out / "cluster.csv"
    with trace.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration",
                    "interval"])
        for k, j in enumerate(jobs):
            nxt = jobs[k + 1].submit if k + 1 < len(jobs) else j.submit
            w.writerow([j.index, j.gpus, j.submit, 1, "resnet50", j.duration, nxt - j.submit])
    with spec.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["num_switch", "num_node_p_switch", "num_gpu_p_node", "num_cpu_p_node",
                    "mem_p_node"])
        w.writerow([1, nodes, GPUS_PER_NODE, CPUS_PER_NODE, MEM_PER_NODE])
    return trace, spec


def job_id(index: int) -> JobId:
    """Zero-padded so that id order is file order (our FIFO breaks submit-time ties by id)."""
    return JobId(f"j{index:06d}")


def to_jobs(jobs: list[TraceJob], shape: str = "count") -> list[Job]:
    out = []
    for j in jobs:
        if shape == "count":
            ps = PodSet("w", j.gpus, PodRequest(1))
        else:
            per = min(j.gpus, GPUS_PER_NODE)
            ps = PodSet("w", j.gpus // per, PodRequest(per))
        out.append(Job(job_id(j.index), TenantId("vc"), (ps,), float(j.submit), float(j.duration)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--nodes", type=int, default=32)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    trace, spec = write_tiresias(read_philly(args.trace), args.nodes, args.out)
    print(trace, spec)


if __name__ == "__main__":
    main()
