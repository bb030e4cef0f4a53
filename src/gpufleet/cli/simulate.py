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
from gpufleet.report.estimates import estimate_section
from gpufleet.report.fmt import duration
from gpufleet.report.fragmentation import FRAGMENTATION_ROWS, fmt_cell, fragmentation_section
from gpufleet.report.simulation import COMPARISON_ROWS, deadlock_section, fmt_value, simulation_report
from gpufleet.report.tenancy import tenancy_sections
from gpufleet.report.topology import TOPOLOGY_ROWS, fmt_x, topology_section
from gpufleet.sim.metrics import summarize
from gpufleet.sim.runner import SimResult
from gpufleet.sim.runner import simulate as run_simulation
from gpufleet.sim.runtime import runtime_model_for
from gpufleet.sim.scenario import Scenario, bundled, bundled_names, load_scenario, parse_scenario
from gpufleet.sim.usage import UsageTracker


def resolve_scenario(arg: str | None, fleet: Path | None = None, trace: Path | None = None) -> Scenario:
    if fleet is not None or trace is not None:
        if arg is not None or fleet is None or trace is None:
            raise fail("--fleet and --trace go together, instead of a SCENARIO")
        data = {"name": trace.stem, "description": f"trace {trace} replayed on fleet {fleet}",
                "fleet": {"file": str(fleet.resolve())}, "workload": {"trace": str(trace.resolve())},
                "policies": ["gang-easy", "gang-bestfit"]}
        return parse_scenario(data, "<command line>")
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

            results[name] = run_simulation(scn.fleet, jobs, profile(name, scn.fleet.fabric), seed=seed or 0,
                                           horizon=horizon, cycle_interval_s=scn.spec.cycle_interval_s,
                                           progress=tick,
                                           runtime_model=runtime_model_for(scn.spec.runtime_model, scn.fleet),
                                           tenancy=scn.tenancy, usage_tracker=usage_tracker_for(scn))
            bar.update(task, completed=end_guess)
    return results


def usage_tracker_for(scn: Scenario) -> UsageTracker | None:
    """A fresh decayed-usage tracker for fair share, with the scenario's half-life."""
    ten = scn.tenancy
    return UsageTracker(ten.half_life_s) if ten is not None else None


def print_tenants(summaries: dict[str, dict]) -> None:
    t = Table(title="Per tenant: wait p50 / p95, share of fleet (entitlement)", header_style="bold")
    t.add_column("tenant")
    for name in summaries:
        t.add_column(name, justify="right")
    first = next(iter(summaries.values()))
    for tenant in first["tenants"]:
        rows = [s["tenants"][tenant] for s in summaries.values()]
        cells = [f"{duration(r['wait_p50_s'])} / {duration(r['wait_p95_s'])}, {r['share_of_fleet_pct']:.1f}%"
                 for r in rows]
        t.add_row(f"{tenant} ({first['tenants'][tenant]['entitlement_pct']:.1f}%)", *cells)
    t.add_row("preemptions / lost GPU-h",
              *[f"{s['preemptions']:,} / {s['lost_gpu_hours']:,.1f}" for s in summaries.values()])
    console.print(t)


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


def print_rows(title: str, summaries: dict[str, dict], rows: tuple[tuple[str, str, str], ...]) -> None:
    t = Table(title=title, header_style="bold")
    t.add_column("metric")
    names = [n for n, s in summaries.items() if rows[0][0] in s]
    for name in names:
        t.add_column(name, justify="right")
    for key, label, kind in rows:
        t.add_row(label, *[fmt_x(summaries[n][key]) if kind == "x" else f"{summaries[n][key]:,}"
                           for n in names])
    console.print(t)


def shows_fragmentation(results: dict[str, SimResult]) -> bool:
    """The fragmentation section belongs in a report of fractional requests or defrag policies."""
    return any("defrag" in n for n in results) or any(
        ps.request.is_fractional for r in results.values() for j in r.jobs.values() for ps in j.pod_sets)


def print_fragmentation(summaries: dict[str, dict]) -> None:
    t = Table(title="Fragmentation and defrag", header_style="bold")
    t.add_column("metric")
    for name in summaries:
        t.add_column(name, justify="right")
    for key, label, kind in FRAGMENTATION_ROWS:
        t.add_row(label, *[fmt_cell(s[key], kind) for s in summaries.values()])
    console.print(t)


@app.command()
@one_line_errors
def simulate(
    scenario: Annotated[str | None, typer.Argument(
        help="Scenario YAML file, or a bundled name (default, deadlock, tenancy, training, "
        "fractional). Default: 'default'.")] = None,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help=f"Policy to run (repeatable): {', '.join(PROFILES)}.")] = None,
    out: Annotated[Path, typer.Option(help="Directory for summary.json, report.html, event logs.")]
    = Path("gpufleet-out"),
    seed: Annotated[int | None, typer.Option(help="Workload seed (overrides the scenario's).")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    fleet: Annotated[Path | None, typer.Option(
        help="Fleet YAML (e.g. from `gpufleet slurm import-conf`), with --trace.")] = None,
    trace: Annotated[Path | None, typer.Option(
        help="Trace in gpufleet JSON lines (e.g. from `gpufleet slurm import-sacct`), with --fleet.")]
    = None,
    kueue: Annotated[list[Path] | None, typer.Option(
        help="Kueue manifests (files, directories) or a `gpufleet kueue import` config, with --fleet "
        "and --trace: replay the trace under those quotas with our policy and Kueue's.")] = None,
) -> None:
    """Simulate a GPU fleet under one or more scheduling policies and write a report."""
    if kueue:
        if scenario is not None or fleet is None or trace is None:
            raise fail("--kueue goes with --fleet and --trace, instead of a SCENARIO")
        from gpufleet.cli.kueue import kueue_trace_scenario
        scn = kueue_trace_scenario(fleet, trace, kueue)
    else:
        scn = resolve_scenario(scenario, fleet, trace)
    policies = policy or scn.spec.policies
    for p in policies:
        if p not in PROFILES:
            raise fail(f"--policy: unknown policy {p!r}; expected one of {', '.join(PROFILES)}")
    results = run_policies(scn, policies, seed, progress)
    summaries = {n: summarize(r, scn.tenancy) for n, r in results.items()}
    extra = []
    if scn.name != "deadlock":
        dl = bundled("deadlock")
        dl_results = run_policies(dl, [p for p in ("gang-bestfit", "per-pod") if p in PROFILES],
                                  None, show_progress=False)
        extra.append(deadlock_section(dl_results, {n: summarize(r) for n, r in dl_results.items()}))
    else:
        extra.append(deadlock_section(results, summaries))
    estimates = estimate_section(results, summaries)
    if estimates is not None:
        extra.insert(0, estimates)
    if any(r.slowdowns is not None for r in results.values()):
        extra.insert(0, topology_section(results, summaries))
    if scn.tenancy is not None:
        window = scn.horizon or max(r.end_time for r in results.values())
        extra[:0] = tenancy_sections(results, summaries, scn.tenancy, window)
    fractional = shows_fragmentation(results)
    if fractional:
        extra.insert(0, fragmentation_section(
            results, summaries, scn.horizon or max(r.end_time for r in results.values())))
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(
        {"scenario": scn.name, "fleet_gpus": scn.fleet.total_gpus, "policies": summaries}, indent=2))
    for n, r in results.items():
        r.recorder.write_log(out / f"events-{n}.jsonl")
    horizon = scn.horizon or max(r.end_time for r in results.values())
    (out / "report.html").write_text(
        simulation_report(scn.name, scn.spec.description, results, summaries, horizon, extra))
    print_comparison(summaries)
    if any("slowdown_mean" in s for s in summaries.values()):
        print_rows("Placement slowdown (topology runtime model)", summaries, TOPOLOGY_ROWS)
    if scn.tenancy is not None:
        print_tenants(summaries)
    if fractional:
        print_fragmentation(summaries)
    console.print(f"wrote {out / 'summary.json'}, {out / 'report.html'}")
