"""`gpufleet fragbench --nodes NODES.csv --pods PODS.csv [--policy NAME]... [--seeds 42-51] [--out DIR]`.

FGD's experiment (Weng et al., ATC 2023): fill the cluster to 130 % of its GPU capacity, one pod at a
time, per policy and seed. Prints a table and, as the last stdout line, one JSON object with the
KPIs; `--out` receives the per-seed curves (csv and json) and PNG plots.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path
from typing import Annotated

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import typer  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402

from gpufleet.cli.common import (  # noqa: E402
    Output,
    Table,  # noqa: E402
    emit_json,
    err_console,
    fail,
    one_line_errors,
    wide_console,
)
from gpufleet.cli.main import app  # noqa: E402
from gpufleet.cli.outdir import claim_out_dir  # noqa: E402
from gpufleet.policies.fgd import POLICIES  # noqa: E402
from gpufleet.report.jsonsafe import dumps, write_json  # noqa: E402
from gpufleet.studies.fragbench import X_MAX, PolicyResult, Workload, run_policy  # noqa: E402
from gpufleet.traces.openb import read_nodes, read_pods  # noqa: E402

SERIES = (("alloc_pct", "GPU allocation (% of capacity)"),
          ("frag_pct", "fragmented GPU (% of capacity)"),
          ("frag_ratio_pct", "fragmented GPU (% of idle)"))


#: Each seed is one fill of the cluster per policy (seconds each on the openb traces); FGD's paper
#: averages 10. More than this is a typo (``1-100000000``), not an experiment.
MAX_SEEDS = 1000


def parse_seeds(text: str) -> list[int]:
    """'42-51', '42,44,46' or '7'; ranges are inclusive; at most ``MAX_SEEDS`` seeds."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            first, last = int(lo), int(hi) if hi else int(lo)
            if last < first or first < 0:
                raise ValueError
            if len(seeds) + last - first + 1 > MAX_SEEDS:
                raise fail(f"--seeds {text!r}: {len(seeds) + last - first + 1:,} seeds or more; "
                           f"at most {MAX_SEEDS:,} are supported")
            seeds.extend(range(first, last + 1))
    except ValueError:
        raise fail(f"--seeds {text!r}: expected non-negative seeds like 42-51 or 42,43,44") from None
    return seeds


def write_outputs(out: Path, pods_name: str, results: dict[str, PolicyResult]) -> None:
    """curves.csv (one row per policy, seed, arrived %), curves.json, one PNG per series."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "curves.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["policy", "seed", "arrived_pct", *[name for name, _ in SERIES]])
        for name, res in results.items():
            for seed, c in zip(res.seeds, res.curves, strict=True):
                for x in range(X_MAX + 1):
                    w.writerow([name, seed, x, *(round(float(getattr(c, s)[x]), 4) for s, _ in SERIES)])
    doc = {"pods": pods_name, "arrived_pct": list(range(X_MAX + 1)), "policies": {
        name: {"summary": res.summary(), "failed_pods": list(res.failed), "seeds": {
            str(seed): {s: [round(float(v), 4) for v in getattr(c, s)] for s, _ in SERIES}
            for seed, c in zip(res.seeds, res.curves, strict=True)}}
        for name, res in results.items()}}
    write_json(out / "curves.json", doc)
    x = np.arange(X_MAX + 1)
    for series, label in SERIES:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for name, res in results.items():
            ax.plot(x, np.mean([getattr(c, series) for c in res.curves], axis=0), label=name)
        ax.set_xlabel("arrived GPU workload (% of capacity)")
        ax.set_ylabel(label)
        ax.set_title(f"{pods_name}: {label}, mean of {len(next(iter(results.values())).seeds)} seeds")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.savefig(out / f"{series}.png", dpi=110, bbox_inches="tight")
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    names = list(results)
    means = [results[n].unallocated_at_100.mean() for n in names]
    stds = [results[n].unallocated_at_100.std() for n in names]
    ax.bar(names, means, yerr=stds, capsize=4)
    ax.set_ylabel("unallocated GPU % at arrived = 100 %")
    ax.set_title(pods_name)
    fig.savefig(out / "unallocated_bar.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def print_table(pods_name: str, results: dict[str, PolicyResult]) -> None:
    t = Table(title=f"fragbench {pods_name}", header_style="bold")
    for col in ("policy", "unallocated % @100", "std", "alloc % @130", "failed pods", "seconds"):
        t.add_column(col, justify="left" if col == "policy" else "right")
    for name, res in results.items():
        s = res.summary()
        t.add_row(name, f"{s['unallocated_pct_at_100']:.2f}", f"{s['unallocated_std']:.2f}",
                  f"{s['alloc_pct_at_130']:.2f}", f"{np.mean(res.failed):.0f}", f"{res.seconds:.1f}")
    wide_console().print(t)


@app.command()
@one_line_errors
def fragbench(
    nodes: Annotated[Path, typer.Option(help="openb node csv (sn, cpu_milli, memory_mib, gpu, model).")],
    pods: Annotated[Path, typer.Option(
        help="openb pod csv (name, cpu_milli, memory_mib, num_gpu, gpu_milli[, gpu_spec]).")],
    policy: Annotated[list[str] | None, typer.Option(
        help=f"Policy to run (repeatable; default all): {', '.join(POLICIES)}.")] = None,
    seeds: Annotated[str, typer.Option(help="Seeds, e.g. 42-51 or 42,43.")] = "42-51",
    out: Annotated[Path | None, typer.Option(help="Directory for curves (csv, json) and PNG plots.")] = None,
    progress: Annotated[bool, typer.Option(help="Show progress on stderr.")] = True,
    output: Annotated[Output, typer.Option(
        "--output", "-o",
        help="text: a table, then the KPIs as one JSON line; json: only the KPIs, as one JSON document.")]
    = Output.TEXT,
) -> None:
    """FGD's fragmentation experiment: allocation and fragmentation as the cluster fills to 130 %."""
    names = policy or list(POLICIES)
    unknown = [n for n in names if n not in POLICIES]
    if unknown:
        raise fail(f"--policy {unknown[0]!r}: expected one of {', '.join(POLICIES)}")
    seed_list = parse_seeds(seeds)
    run_dir = claim_out_dir(out, "fragbench") if out is not None else None
    work = Workload(read_nodes(nodes), read_pods(pods))
    if not work.pods.total_gpu_milli.any():
        raise fail(f"{pods}: no pod asks for a GPU (num_gpu is 0 on every row); the fragmentation "
                   "experiment needs GPU pods")
    pods_name = pods.name
    results: dict[str, PolicyResult] = {}
    with Progress(TextColumn("[bold]{task.description:<14}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("seed {task.fields[seed]}"), TimeElapsedColumn(),
                  console=err_console, disable=not progress) as bar:
        for name in names:
            task = bar.add_task(name, total=len(seed_list), seed="")
            results[name] = run_policy(
                work, POLICIES[name], seed_list, clock=time.perf_counter,
                on_run=lambda tr, task=task: bar.update(task, advance=1, seed=tr.seed))
    if output is Output.TEXT:
        print_table(pods_name, results)
    if out is not None and run_dir is not None:
        write_outputs(out, pods_name, results)
        run_dir.finish()
    kpis = {"pods": pods_name, "results": {n: r.summary() for n, r in results.items()}}
    if output is Output.JSON:
        emit_json(kpis)
    else:
        typer.echo(dumps(kpis))
