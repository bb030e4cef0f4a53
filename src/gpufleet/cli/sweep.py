"""`gpufleet sweep [SPEC] [--out DIR] [--ray auto|local|ADDRESS] [--workers N]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gpufleet.cli.common import Table, console, err_console, fail, one_line_errors
from gpufleet.cli.main import app
from gpufleet.sweep.executors import default_workers
from gpufleet.sweep.report import direction_text, fmt_metric, group_rows, wider_than_mean
from gpufleet.sweep.run import run_sweep
from gpufleet.sweep.spec import bundled_sweep, load_sweep
from gpufleet.sweep.stats import t_interval


def print_summary(rows: list[dict], params: list[str], metric: str) -> None:
    grouped = group_rows(rows, params)
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    t = Table(title=f"{metric}: mean ± 95% t-interval across seeds", header_style="bold")
    t.add_column("setting")
    for p in policies:
        t.add_column(p, justify="right")
    wide = False
    for label, by_policy in grouped.items():
        cells = []
        for p in policies:
            ci = t_interval([r.get(metric, float("nan")) for r in by_policy.get(p, [])])
            mark = " †" if wider_than_mean(ci) else ""
            wide = wide or bool(mark)
            cells.append(fmt_metric(metric, ci.mean) + (f" ± {fmt_metric(metric, ci.half_width)}"
                                                        if ci.n > 1 else "") + mark)
        t.add_row(label, *cells)
    t.caption = direction_text(metric) + ("; † interval wider than the mean: too few seeds or a skewed "
                                          "metric (read the report's paired tests)" if wide else "")
    console.print(t)


@app.command()
@one_line_errors
def sweep(
    spec: Annotated[Path | None, typer.Argument(
        help="Sweep YAML: scenarios × policies × seeds × parameters. Default: the bundled example "
        "(3 policies × 5 seeds × 2 loads on a small fleet, about a minute on 2 cores).")] = None,
    out: Annotated[Path, typer.Option(help="Directory for results.parquet, report.html and cells/ "
                                      "(finished cells found there are not rerun).")]
    = Path("gpufleet-sweep"),
    ray: Annotated[str | None, typer.Option(
        "--ray", help="Run the cells on Ray: 'auto' (the cluster this machine belongs to), 'local' "
        "(start one here with --workers CPUs) or an address such as ray://head:10001.")] = None,
    workers: Annotated[int | None, typer.Option(
        help="Local processes (default: this machine's cores); with --ray local, the Ray CPUs.")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Run a grid of simulations and compare the policies across seeds, with significance."""
    if workers is not None and not 1 <= workers <= 4096:
        raise fail(f"--workers: expected 1 to 4096 processes, got {workers}")
    if spec is not None and spec.is_dir():
        raise fail(f"{spec}: is a folder; expected a sweep YAML file")
    if out.exists() and not out.is_dir():
        raise fail(f"--out {out}: is a file; expected a folder (created if missing)")
    sw = load_sweep(spec) if spec is not None else bundled_sweep()
    n_workers = workers or default_workers()
    total = len(sw.cells)
    with Progress(TextColumn("[bold]cells"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, disable=not progress) as bar:
        task = bar.add_task("cells", total=total)
        try:
            outcome = run_sweep(sw, out, ray_address=ray, workers=n_workers,
                                progress=lambda n: bar.update(task, completed=n))
        except OSError as e:
            raise fail(f"--out {out}: cannot write there ({e.strerror or e})") from None
    for m in sw.spec.metrics[:2]:
        print_summary(outcome.rows, sw.parameter_names, m)
    console.print(f"{outcome.ran} cell(s) run, {outcome.reused} reused from {out / 'cells'}; "
                  f"wrote {outcome.parquet}, {outcome.html}")
