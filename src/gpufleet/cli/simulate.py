"""`gpufleet simulate [SCENARIO] [--policy NAME]... [--out DIR] [--seed N]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from gpufleet.cli.common import (
    Output,
    Table,
    console,
    emit_json,
    err_console,
    fail,
    one_line_errors,
    warn,
    wide_console,
)
from gpufleet.cli.main import app
from gpufleet.cli.outdir import claim_out_dir
from gpufleet.cli.slurm_sim import actual_rows, actual_section, print_actual, slurm_profiles
from gpufleet.engine.profile import Profile
from gpufleet.model.job import Job
from gpufleet.policies.registry import PROFILES, profile
from gpufleet.report.estimates import estimate_section
from gpufleet.report.fmt import duration, durations
from gpufleet.report.fragmentation import FRAGMENTATION_ROWS, fmt_row, fragmentation_section
from gpufleet.report.jsonsafe import write_json
from gpufleet.report.reliability import (
    OPTIONAL_ROWS,
    RELIABILITY_ROWS,
    Studies,
    reliability_section,
    reliability_studies,
)
from gpufleet.report.reliability import fmt as fmt_reliability
from gpufleet.report.simulation import (
    COMPARISON_ROWS,
    deadlock_section,
    row_cells,
    simulation_report,
    size_label,
    unschedulable_section,
)
from gpufleet.report.tenancy import tenancy_sections
from gpufleet.report.topology import TOPOLOGY_ROWS, fmt_x, topology_section
from gpufleet.sim.feasibility import Unschedulable, unschedulable_jobs
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
                 show_progress: bool = True, jobs: list[Job] | None = None,
                 custom: dict[str, tuple[Profile, float]] | None = None) -> dict[str, SimResult]:
    """Each policy by name; ``custom`` gives (profile, cycle interval) for names outside the
    registry (``slurm``: the Slurm-like profile configured by a slurm.conf)."""
    custom = custom or {}
    jobs = scn.jobs(seed) if jobs is None else jobs
    horizon = scn.horizon
    # the bar's length: the arrival horizon, else when the work would end with no wait at all (a
    # lower bound of the makespan; the last arrival alone, 0 for a single job, made the bar full at once)
    end_guess = horizon or max((j.submit_time + j.run_time for j in jobs), default=1.0) or 1.0
    results: dict[str, SimResult] = {}
    with Progress(TextColumn("[bold]{task.description:<14}"), BarColumn(),
                  TextColumn("{task.fields[day]}"), TimeElapsedColumn(),
                  console=err_console, disable=not show_progress, transient=False) as bar:
        for name in policies:
            task = bar.add_task(name, total=end_guess, day="")

            def tick(t: float, task: int = task) -> None:
                bar.update(task, completed=min(t, end_guess), day=f"sim day {t / 86400:5.1f}")

            prof, interval = custom.get(name) or (profile(name, scn.fleet.fabric), scn.spec.cycle_interval_s)
            results[name] = run_simulation(scn.fleet, jobs, prof, seed=seed or 0,
                                           horizon=horizon, cycle_interval_s=interval,
                                           progress=tick,
                                           runtime_model=runtime_model_for(scn.spec.runtime_model, scn.fleet),
                                           tenancy=scn.tenancy, usage_tracker=usage_tracker_for(scn),
                                           failures=scn.failures,
                                           failures_until=scn.spec.reliability.until_s(horizon)
                                           if scn.spec.reliability is not None else None)
            # the clock runs on after the last job when failures are on (repairs, returns); the run
            # itself — its makespan, its metrics — ends with the jobs, which is what the bar says
            r = results[name]
            bar.update(task, completed=end_guess, day=f"done: jobs end day {r.end_time / 86400:.1f}")
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
    """The comparison, then wait p50 / p95 by job size: EASY backfill trades a little of the small
    jobs' wait for much less of the big gangs' wait, which the all-jobs percentiles hide."""
    t = Table(title="Policy comparison", header_style="bold")
    t.add_column("metric")
    for name in summaries:
        t.add_column(name, justify="right", no_wrap=True)
    for key, label, kind in COMPARISON_ROWS:
        cells = row_cells(summaries, key, kind)
        if kind == "bool":
            cells = [f"[red]{c}[/]" if c == "yes" else c for c in cells]
        t.add_row(label, *cells)
    first = next(iter(summaries.values()))
    t.add_section()
    for label in first["wait_by_size"]:
        cells = [wait_cell(s["wait_by_size"][label]) for s in summaries.values()]
        t.add_row(f"wait p50 / p95, {size_label(label)} (started)", *cells)
    wide_console().print(t)


def wait_cell(bucket: dict) -> str:
    """'0.2 h / 3.1 h (n=40)' (one unit per cell); 'n/a (n=0)' when no job of that size started."""
    if not bucket["jobs"]:
        return "n/a (n=0)"
    p50, p95 = durations([bucket["wait_p50_s"], bucket["wait_p95_s"]])
    return f"{p50} / {p95} (n={bucket['jobs']:,})"


def report_unschedulable(scn: Scenario, jobs: list[Job]) -> list[Unschedulable]:
    """Warn (stderr) about jobs that can never run on the fleet: count, first few, reasons."""
    never = unschedulable_jobs(jobs, scn.fleet)
    if never:
        shown = "; ".join(f"{u.job}: {u.reason}" for u in never[:3])
        more = f"; … {len(never) - 3:,} more in summary.json" if len(never) > 3 else ""
        warn(f"{len(never):,} of {len(jobs):,} jobs can never run on this fleet "
             f"({scn.fleet.total_gpus:,} GPUs): {shown}{more}")
    return never


def print_rows(title: str, summaries: dict[str, dict], rows: tuple[tuple[str, str, str], ...]) -> None:
    t = Table(title=title, header_style="bold")
    t.add_column("metric")
    names = [n for n, s in summaries.items() if rows[0][0] in s]
    for name in names:
        t.add_column(name, justify="right")
    for key, label, kind in rows:
        t.add_row(label, *[fmt_x(summaries[n][key]) if kind == "x" else f"{summaries[n][key]:,}"
                           for n in names])
    wide_console().print(t)


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
        t.add_row(label, *fmt_row([s[key] for s in summaries.values()], kind))
    wide_console().print(t)


def print_reliability(summaries: dict[str, dict], studies: Studies | None = None) -> None:
    """The run's reliability rows per policy, then (``studies``) what the scenario is about —
    recovery, cadence, spares, pre-flight, spot, elastic — the same rows as the HTML report: with
    one gang on its own fleet every policy places it alike, so the policy columns match and the
    comparison that matters is between the designs each study runs."""
    t = Table(title="Reliability (failures on)", header_style="bold")
    t.add_column("metric")
    for name in summaries:
        t.add_column(name, justify="right")
    for key, label, kind in RELIABILITY_ROWS:
        t.add_row(label, *[fmt_reliability(s[key], kind) for s in summaries.values()])
    for key, label, kind in OPTIONAL_ROWS:  # elastic jobs, an upgrade rollout: when they ran
        if all(key in s for s in summaries.values()):
            t.add_row(label, *[fmt_reliability(s[key], kind) for s in summaries.values()])
    console.print(t)
    if studies is None:
        return
    keys = [k for k, _, _ in RELIABILITY_ROWS]
    if len(summaries) > 1 and len({tuple(s.get(k) for k in keys) for s in summaries.values()}) == 1:
        console.print("the policies ran this scenario identically (one gang on its own fleet); "
                      "the studies below compare what it is about:", highlight=False)
    for title, (headers, rows) in studies.tables.items():
        st = Table(title=title, header_style="bold")
        for h in headers:
            st.add_column(str(h))
        for row in rows:
            st.add_row(*[str(c) for c in row])
        console.print(st)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@one_line_errors
def simulate(
    ctx: typer.Context,
    scenario: Annotated[str | None, typer.Argument(
        help=f"Scenario YAML file, or a bundled name ({', '.join(bundled_names())}), or 'serving' "
        "(the inference floor on the Alibaba 2025 serving trace; "
        "--trace CSV to point at it), or 'hybrid' (Slurm partition + Kubernetes pool on one fleet; "
        "takes the options of `gpufleet k8s hybrid`). Default: 'default'.")] = None,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help=f"Policy to run (repeatable): {', '.join(PROFILES)}.")] = None,
    out: Annotated[Path, typer.Option(help="Directory for summary.json, report.html, event logs.")]
    = Path("gpufleet-out"),
    seed: Annotated[int | None, typer.Option(
        help="Workload seed (overrides the scenario's).", min=0, max=2**63 - 1)] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    fleet: Annotated[Path | None, typer.Option(
        help="Fleet YAML (e.g. from `gpufleet slurm import-conf`), with --trace.")] = None,
    trace: Annotated[Path | None, typer.Option(
        help="Trace in gpufleet JSON lines (e.g. from `gpufleet slurm import-sacct`), with --fleet.")]
    = None,
    slurm_conf: Annotated[Path | None, typer.Option(
        "--slurm-conf", help="slurm.conf whose priority weights and backfill settings configure "
        "--policy slurm (Slurm's multifactor order, one task per node, conservative backfill).")] = None,
    output: Annotated[Output, typer.Option(
        "--output", "-o",
        help="text: tables on stdout; json: summary.json's document on stdout instead.")] = Output.TEXT,
    kueue: Annotated[list[Path] | None, typer.Option(
        help="Kueue manifests (files, directories) or a `gpufleet kueue import` config, with --fleet "
        "and --trace: replay the trace under those quotas with our policy and Kueue's.")] = None,
    gpu_model: Annotated[list[str] | None, typer.Option(
        "--gpu-model", help="With --kueue: FLAVOR=MODEL for a ResourceFlavor whose labels name no "
        "GPU model (as `gpufleet kueue import --gpu-model`).")] = None,
) -> None:
    """Simulate a GPU fleet under one or more scheduling policies and write a report."""
    see = ("see `gpufleet plan serving --help` for the serving study's options" if scenario == "serving"
           else "see 'gpufleet simulate --help'")
    unknown = [a for a in [scenario or "", *ctx.args] if a.startswith("-") and not Path(a).exists()]
    if unknown and scenario != "hybrid":   # unknown options are let through only for 'hybrid'
        raise fail(f"gpufleet simulate: No such option: {unknown[0]} ({see})")
    if ctx.args and scenario != "hybrid":
        raise fail(f"gpufleet simulate: Got unexpected extra argument {ctx.args[0]!r} ({see})")
    if scenario == "serving" and not Path(scenario).exists():  # the serving-floor study (cli/plan_serving.py)
        if fleet is not None or policy:
            raise fail("serving: --fleet and --policy do not apply; `plan serving` takes its options")
        from gpufleet.cli.plan_serving import simulate_serving
        return simulate_serving(trace, out, seed, progress and output is Output.TEXT, output)
    if scenario == "hybrid" and not Path(scenario).exists():   # the Slurm + Kubernetes split (cli/k8s.py)
        if fleet is not None or trace is not None or policy or slurm_conf is not None:
            raise fail("hybrid: --fleet, --trace, --policy and --slurm-conf do not apply; "
                       "see `gpufleet k8s hybrid --help` for its options")
        from gpufleet.cli.k8s import simulate_hybrid
        source = ctx.get_parameter_source("out")   # Typer's own click: compare by name
        explicit_out = source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")
        return simulate_hybrid(list(ctx.args), seed, output.value, out if explicit_out else None, progress)
    if gpu_model and not kueue:
        raise fail("--gpu-model goes with --kueue (it names the GPU model of a Kueue ResourceFlavor)")
    if kueue:
        if scenario is not None or fleet is None or trace is None:
            raise fail("--kueue goes with --fleet and --trace, instead of a SCENARIO")
        from gpufleet.cli.kueue import kueue_trace_scenario
        scn = kueue_trace_scenario(fleet, trace, kueue, gpu_model or [])
    else:
        scn = resolve_scenario(scenario, fleet, trace)
    policies = policy or scn.spec.policies
    custom = slurm_profiles(policies, slurm_conf, scn.fleet)
    for p in policies:
        if p not in PROFILES and p not in custom:
            raise fail(f"--policy: unknown policy {p!r}; expected one of {', '.join(PROFILES)}, "
                       "or slurm (with --slurm-conf)")
    run_dir = claim_out_dir(out, "simulate")
    for w in scn.warnings():
        warn(w)
    jobs = scn.jobs(seed)
    never = report_unschedulable(scn, jobs)
    results = run_policies(scn, policies, seed, progress and output is Output.TEXT, jobs, custom)
    # One window for every policy: the arrival horizon, else the latest end of any policy's run
    # (a deadlocked run stops at its last event and would otherwise average over nothing).
    window = scn.horizon or max(r.end_time for r in results.values())
    summaries = {n: summarize(r, scn.tenancy, never, window) for n, r in results.items()}
    extra = []
    if scn.name != "deadlock":
        dl = bundled("deadlock")
        dl_results = run_policies(dl, [p for p in ("gang-bestfit", "per-pod") if p in PROFILES],
                                  None, show_progress=False)
        dl_window = max(r.end_time for r in dl_results.values())
        extra.append(deadlock_section(dl_results, {n: summarize(r, window=dl_window)
                                                   for n, r in dl_results.items()}, this_run=False))
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
    studies = None
    if scn.failures is not None:
        studies = reliability_studies(scn.failures)
        extra.insert(0, reliability_section(summaries, scn.failures, studies))
    fractional = shows_fragmentation(results)
    if fractional:
        extra.insert(0, fragmentation_section(
            results, summaries, scn.horizon or max(r.end_time for r in results.values())))
    if never:
        extra.insert(0, unschedulable_section([{"id": u.job, "reason": u.reason} for u in never], len(jobs),
                                              scn.fleet.total_gpus))
    actual = actual_rows(trace, results)
    if actual:
        extra.insert(0, actual_section(actual))
    doc = {"scenario": scn.name, "fleet_gpus": scn.fleet.total_gpus, "policies": summaries,
           **({"slurm_actual": actual} if actual else {})}
    write_json(out / "summary.json", doc, indent=2)
    for n, r in results.items():
        r.recorder.write_log(out / f"events-{n}.jsonl")
    horizon = scn.horizon or max(r.end_time for r in results.values())
    (out / "report.html").write_text(
        simulation_report(scn.name, scn.spec.description, results, summaries, horizon, extra))
    run_dir.finish()
    if output is Output.JSON:
        emit_json(doc)
        return
    print_comparison(summaries)
    if any("slowdown_mean" in s for s in summaries.values()):
        print_rows("Placement slowdown (topology runtime model)", summaries, TOPOLOGY_ROWS)
    if scn.tenancy is not None:
        print_tenants(summaries)
    if fractional:
        print_fragmentation(summaries)
    if actual:
        print_actual(actual)
    if scn.failures is not None:
        print_reliability(summaries, studies)
    console.print(f"wrote {out / 'summary.json'}, {out / 'report.html'}")
