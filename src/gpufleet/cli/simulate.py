"""`gpufleet simulate [SCENARIO] [--policy NAME]... [--out DIR] [--seed N]`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from gpufleet.cli.common import console, err_console, fail, one_line_errors
from gpufleet.cli.main import app
from gpufleet.policies.registry import PROFILES, profile
from gpufleet.report.simulation import COMPARISON_ROWS, deadlock_section, fmt_value, simulation_report
from gpufleet.sim.metrics import summarize
from gpufleet.sim.runner import SimResult
from gpufleet.sim.runner import simulate as run_simulation
from gpufleet.sim.scenario import Scenario, bundled, bundled_names, load_scenario


def resolve_scenario(arg: str | None) -> Scenario:
    if arg is None:
        return bundled("default")
    path = Path(arg)
    if path.exists() or arg.endswith((".yaml", ".yml")):
        return load_scenario(path)
    if arg in bundled_names():
        return bundled(arg)
    raise fail(f"{arg}: no such file, and not a bundled scenario ({', '.join(bundled_names())})")


def run_policies(scn: Scenario, policies: list[str], seed: int | None,
                 show_progress: bool = True) -> dict[str, SimResult]:
    jobs = scn.jobs(seed)
    horizon = scn.horizon
    end_guess = horizon or max((j.submit_time for j in jobs), default=1.0) or 1.0
    results: dict[str, SimResult] = {}
    with Progress(TextColumn("[bold]{task.description:<14}"), BarColumn(),
                  TextColumn("{task.fields[day]}"), TimeElapsedColumn(),
                  console=err_console, disable=not show_progress, transient=False) as bar:
        for name in policies:
            task = bar.add_task(name, total=end_guess, day="")

            def tick(t: float, task: int = task) -> None:
                bar.update(task, completed=min(t, end_guess), day=f"day {t / 86400:5.1f}")

            results[name] = run_simulation(scn.fleet, jobs, profile(name), seed=seed or 0,
                                           horizon=horizon, cycle_interval_s=scn.spec.cycle_interval_s,
                                           progress=tick)
            bar.update(task, completed=end_guess)
    return results


def print_comparison(summaries: dict[str, dict]) -> None:
    t = Table(title="Policy comparison", header_style="bold")
    t.add_column("metric")
    for name in summaries:
        t.add_column(name, justify="right")
    for key, label, kind in COMPARISON_ROWS:
        cells = [fmt_value(s[key], kind) for s in summaries.values()]
        if kind == "bool":
            cells = [f"[red]{c}[/]" if c == "yes" else c for c in cells]
        t.add_row(label, *cells)
    console.print(t)


@app.command()
@one_line_errors
def simulate(
    scenario: Annotated[str | None, typer.Argument(
        help="Scenario YAML file, or a bundled name (default, deadlock). Default: 'default'.")] = None,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help=f"Policy to run (repeatable): {', '.join(PROFILES)}.")] = None,
    out: Annotated[Path, typer.Option(help="Directory for summary.json, report.html, event logs.")]
    = Path("gpufleet-out"),
    seed: Annotated[int | None, typer.Option(help="Workload seed (overrides the scenario's).")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Simulate a GPU fleet under one or more scheduling policies and write a report."""
    scn = resolve_scenario(scenario)
    policies = policy or scn.spec.policies
    for p in policies:
        if p not in PROFILES:
            raise fail(f"--policy: unknown policy {p!r}; expected one of {', '.join(PROFILES)}")
    results = run_policies(scn, policies, seed, progress)
    summaries = {n: summarize(r) for n, r in results.items()}
    extra = []
    if scn.name != "deadlock":
        dl = bundled("deadlock")
        dl_results = run_policies(dl, [p for p in ("gang-bestfit", "per-pod") if p in PROFILES],
                                  None, show_progress=False)
        extra.append(deadlock_section(dl_results, {n: summarize(r) for n, r in dl_results.items()}))
    else:
        extra.append(deadlock_section(results, summaries))
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(
        {"scenario": scn.name, "fleet_gpus": scn.fleet.total_gpus, "policies": summaries}, indent=2))
    for n, r in results.items():
        r.recorder.write_log(out / f"events-{n}.jsonl")
    horizon = scn.horizon or max(r.end_time for r in results.values())
    (out / "report.html").write_text(
        simulation_report(scn.name, scn.spec.description, results, summaries, horizon, extra))
    print_comparison(summaries)
    console.print(f"wrote {out / 'summary.json'}, {out / 'report.html'}")
