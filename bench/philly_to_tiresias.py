"""Philly per-VC trace -> Tiresias's simulator input, and the same jobs as gpufleet Jobs.

    python bench/philly_to_tiresias.py /work/shared/data/philly-vc/trace_b436b2.csv \\
        --nodes 32 --out /tmp/tiresias-in

writes ``<out>/trace.csv`` (Tiresias's columns: job_id, num_gpu, submit_time, iterations,
model_name, duration, interval) and ``<out>/cluster.csv`` (one switch of ``--nodes`` nodes × 8
GPUs). Both simulators read the same integers: submit time and duration are truncated to whole
seconds here, as Tiresias's reader does (``int(float(duration))``), so start times can agree
exactly.

The Philly columns (see the data's PROVENANCE.md): ``num_jobs`` is the job's GPU count,
``service`` its work in single-GPU seconds, ``model_name`` one of the nine models of the PCS
artifact the trace comes from. A job's run time on g GPUs is service ÷ speedup(model, g), where
speedup(model, g) = t₁ / t_g, the model's measured time per iteration on 1 and on g GPUs
(``ITER_TIME_US``). That quotient is a whole number of seconds on every row of every trace here (the
trace was made by multiplying a whole run time by the speedup), so ``run_time`` rounds it and
refuses a row where it is not within a millisecond of a whole number. (Using ``service`` itself
as the duration, as this script did before, made multi-GPU jobs run up to ~7× longer: mean JCT
5.6 M s instead of 0.26 M s on b436b2, 32 × 8.) Tiresias uses the model only for CPU/GPU-memory and
tensor sizes, which its ``count`` placement ignores, so every job is written as ``resnet50``.

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

#: Per model, microseconds per training iteration on 1, 2, ... GPUs: the measurements the PCS
#: artifact (github.com/abdullahfsm/PCS, simulation/models.py, MIT; Philly trace: Jeon et al.,
#: USENIX ATC 2019) uses to give each model of the trace its speedup; only as many GPU counts as
#: the per-VC traces use (at most 32).
ITER_TIME_US: dict[str, tuple[int, ...]] = {
    "VggnetModel256": (3020532, 1659208, 1263951, 868694, 765689, 662684, 559679, 456675),
    "GooglenetModel128": (346970, 187140, 146661, 106182, 95118, 84055, 72992, 61929, 58369, 54810,
                          51251, 47692, 46375, 45058, 43741, 42424, 42077, 41731, 41385, 41039),
    "Inception4Model256": (5834222, 2988258, 2228434, 1468610, 1288619, 1108629, 928639, 748649,
                           689155, 629661, 570167, 510674, 488419, 466165, 443911, 421657, 402481,
                           383305, 364129, 344953, 334708, 324464, 314220, 303976, 296448, 288921,
                           281394, 273867, 269776, 265685, 261594, 257504),
    "Resnet50Model128": (941170, 474975, 367447, 259920, 234511, 209103, 183695, 158287, 147347,
                         136408, 125468, 114529, 111929, 109329, 106729, 104129, 101463, 98797,
                         96131, 93466, 92738, 92011, 91283, 90556, 89939, 89322, 88705, 88089),
    "DeepspeechModel64": (619714, 415717, 385933, 356149, 351970, 347791, 343612, 339434, 338022,
                          336610, 335198, 333786, 329423, 325060, 320697, 316334, 314514, 312695,
                          310875, 309056),
    "TransformerModel256": (2776298, 1466578, 1137556, 808534, 712710, 616886, 521062, 425236,
                            410333, 395430, 380527, 365623, 344699, 323775, 302851, 281928, 271382,
                            260836, 250290, 239742, 237244, 234746, 232248, 229748, 228650, 227552,
                            226454, 225357, 222478, 219599, 216720, 213839),
    "DcganModel256": (282031, 155580, 122417, 89254, 81969, 74685, 67401, 60117, 58979, 57841,
                      56703, 55566, 53670, 51774, 49878, 47983, 47107, 46232, 45356, 44481),
    "ChatbotModel256": (114644, 80233, 73326, 66419),
    "VideopredictionModel64": (1123488, 625106, 502540, 379974, 358674, 337375, 316076, 294777,
                               286352, 277927, 269502, 261078, 258117, 255156, 252195, 249234,
                               244498, 239762, 235026, 230291, 227535, 224779, 222023, 219267,
                               219100, 218934, 218768, 218602),
}


def speedup(model: str, gpus: int) -> float:
    """t₁ / t_g for ``model`` on ``gpus`` GPUs (ValueError for a model or GPU count not measured)."""
    times = ITER_TIME_US.get(model)
    if times is None or not 1 <= gpus <= len(times):
        raise ValueError(f"no iteration time for {model!r} on {gpus} GPU(s)")
    return times[0] / times[gpus - 1]


def run_time(service: float, model: str, gpus: int) -> int:
    """Whole seconds a job of ``service`` single-GPU seconds runs on ``gpus`` GPUs."""
    exact = service / speedup(model, gpus)
    whole = round(exact)
    if abs(exact - whole) > 1e-3:
        raise ValueError(f"service {service} / speedup({model}, {gpus}) = {exact}: not whole seconds")
    return int(whole)
#: Tiresias's node CPU count and memory (GB) in its n32g4/cluster_spec examples; unused by `count`.
CPUS_PER_NODE, MEM_PER_NODE = 128, 256


@dataclass(frozen=True)
class TraceJob:
    index: int
    gpus: int
    submit: int
    duration: int


def read_philly(path: Path) -> list[TraceJob]:
    """The trace's jobs in file order (which is submit order): submit seconds truncated, run
    times from ``run_time``."""
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    need = {"submit_time", "service", "num_jobs", "model_name"}
    if not rows or not need <= set(rows[0]):
        raise ValueError(f"{path}: expected columns {sorted(need)}")
    out = []
    for i, r in enumerate(rows):
        try:
            duration = run_time(float(r["service"]), r["model_name"], int(r["num_jobs"]))
        except ValueError as e:
            raise ValueError(f"{path}: row {i + 2}: {e}") from None
        out.append(TraceJob(i, int(r["num_jobs"]), int(float(r["submit_time"])), duration))
    return out


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
