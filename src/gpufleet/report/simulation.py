"""The `gpufleet simulate` report: the comparison table, the plots, and the gang-deadlock arithmetic."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from markupsafe import Markup

from gpufleet.report import plots
from gpufleet.report.fmt import NA, duration, durations, pct
from gpufleet.report.html import Section, img, render, table
from gpufleet.sim.runner import SimResult

COMPARISON_ROWS: tuple[tuple[str, str, str], ...] = (
    ("jobs_submitted", "jobs submitted", "int"),
    ("jobs_finished", "jobs finished", "int"),
    ("jobs_pending_at_end", "jobs still pending at the end", "int"),
    ("jobs_unschedulable", "  of which can never run on this fleet", "int"),
    ("wait_jobs", "jobs started (the waits below cover these)", "int"),
    ("gpu_allocation_pct", "GPU allocation (held, time-weighted)", "pct"),
    ("gpu_busy_pct", "GPUs doing work (running jobs)", "pct"),
    ("stranded_gpus_avg", "stranded GPUs (avg)", "float"),
    ("wait_p50_s", "queue wait p50", "dur"),
    ("wait_p95_s", "queue wait p95", "dur"),
    ("wait_p99_s", "queue wait p99", "dur"),
    ("jct_mean_s", "job completion time (mean)", "dur"),
    ("makespan_s", "makespan", "dur"),
    ("deadlocked", "deadlocked", "bool"),
)


def fmt_value(v: Any, kind: str) -> str:
    if v is None:
        return NA
    if kind == "pct":
        return pct(v)
    if kind == "dur":
        return duration(v)
    if kind == "float":
        return f"{v:.1f}"
    if kind == "bool":
        return "yes" if v else "no"
    return f"{v:,}"


def unschedulable_section(never: list[dict], total: int, fleet_gpus: int, shown: int = 200) -> Section:
    """Jobs that can never run on the fleet (found before the run): count, then id and reason."""
    rows: list[list[object]] = [[u["id"], u["reason"]] for u in never[:shown]]
    more = (f"<p>… and {len(never) - shown:,} more (all listed in summary.json).</p>"
            if len(never) > shown else "")
    return Section("Jobs that can never run on this fleet",
                   f"<p>{len(never):,} of {total:,} jobs can never run on this {fleet_gpus:,}-GPU fleet, "
                   "whatever the policy: they stay pending and are not in any wait statistic (waits "
                   "cover started jobs only).</p>" + table(["job", "why"], rows) + more)


def size_label(label: str) -> str:
    """'1' → '1 GPU', '9-64' → '9-64 GPUs', '<1' → '<1 GPU (MIG or share)'."""
    if label == "<1":
        return "<1 GPU (MIG or share)"
    return f"{label} GPU" + ("" if label == "1" else "s")


def row_cells(summaries: Mapping[str, dict], key: str, kind: str) -> list[str]:
    """One row's cells; durations in a row share one unit (no '23.5 h' beside '1.2 d')."""
    if kind == "dur":
        return durations([s[key] for s in summaries.values()])
    return [fmt_value(s[key], kind) for s in summaries.values()]


def comparison_rows(summaries: Mapping[str, dict]) -> list[list[object]]:
    rows: list[list[object]] = []
    for key, label, kind in COMPARISON_ROWS:
        row: list[object] = [label]
        for s, text in zip(summaries.values(), row_cells(summaries, key, kind), strict=True):
            if kind == "bool" and s[key]:
                text = Markup(f'<span class="bad">{text}</span>')
            row.append(text)
        rows.append(row)
    return rows


def _waits(r: SimResult) -> np.ndarray:
    return np.array([r.starts[j] - r.jobs[j].submit_time for j in r.starts])


def deadlock_section(results: Mapping[str, SimResult], summaries: Mapping[str, dict],
                     this_run: bool = True) -> Section:
    """The arithmetic of the two-job deadlock, from the bundled ``deadlock`` scenario's run: this
    report's own run (``this_run``), or a side run made for the appendix of another scenario's
    report, which the text then says."""
    lines = []
    for name, r in results.items():
        s = summaries[name]
        outcome = (f"DEADLOCK — {r.deadlock_detail}" if r.deadlocked else
                   f"both jobs finished; makespan {duration(s['makespan_s'])}")
        lines.append(f'<tr><td>{name}</td><td style="text-align:left">{outcome}</td></tr>')
    arith = (
        "fleet          = 8 nodes × 8 GPUs                     = 64 GPUs\n"
        "each job       = 8 pods × 8 GPUs (one pod fills a node) = 64 GPUs\n"
        "asked together = 2 × 64                                = 128 GPUs on a 64-GPU fleet\n\n"
        "per-pod:  pods queue as A0 B0 A1 B1 … (both controllers create pods at once)\n"
        "          A binds 4 pods = 32 GPUs, B binds 4 pods = 32 GPUs → 64 of 64 GPUs held\n"
        "          A needs 4 more nodes, B needs 4 more nodes, 0 nodes free\n"
        "          neither gang is complete, so neither runs, so nothing is ever released → deadlock\n\n"
        "gang:     A is placed whole (8 nodes) or not at all; B waits holding nothing\n"
        "          A runs 1 h, releases 64 GPUs, B runs 1 h → makespan 2 h, 0 GPU-hours wasted"
    )
    html = (
        "<p>Two training jobs of 8 pods × 8 GPUs arrive together on 8 nodes × 8 GPUs "
        "(<code>gpufleet simulate deadlock</code>). "
        + ("Outcome in this run:</p>" if this_run else
           "This appendix is not about this report's workload: it is the bundled <code>deadlock</code> "
           "scenario, run beside it so every report carries the arithmetic. Its outcome:</p>")
        + "<table><thead><tr><th>policy</th><th style='text-align:left'>outcome</th></tr></thead>"
        f"<tbody>{''.join(lines)}</tbody></table>"
        f'<div class="arith">{arith}</div>'
        "<p>In a busy fleet the same mechanism is partial: pods of big gangs sit bound and idle "
        "while they wait for siblings. The gap between <em>GPU allocation</em> and <em>GPUs doing "
        "work</em> in the comparison above is exactly those held-but-idle GPUs.</p>"
    )
    return Section("Gang deadlock: the arithmetic", html)


def simulation_sections(results: Mapping[str, SimResult], summaries: Mapping[str, dict],
                        horizon: float) -> list[Section]:
    names = list(results)
    total = next(iter(results.values())).fleet_gpus
    end = max(horizon, max(r.end_time for r in results.values()))
    sections = [Section("Comparison", table(["metric", *names], comparison_rows(summaries)))]
    alloc = plots.time_series(
        {n: (r.recorder.t, r.recorder.allocated) for n, r in results.items()}
        | {f"{n} (working)": (r.recorder.t, r.recorder.busy)
           for n, r in results.items() if not r.jobs or (summaries[n]["gpu_busy_pct"] or 0.0)
           < (summaries[n]["gpu_allocation_pct"] or 0.0) - 0.05},
        end, "GPUs allocated over time", "GPUs", ymax=total * 1.05, hline=total)
    queue = plots.time_series({n: (r.recorder.t, r.recorder.queued) for n, r in results.items()},
                              end, "Jobs waiting over time", "pending jobs")
    waits = plots.wait_survival({n: _waits(r) for n, r in results.items()})
    sections.append(Section("GPU allocation over time", img(alloc, "GPU allocation over time") +
                            "<p>The dashed line is the fleet's capacity. A “(working)” line shows "
                            "GPUs held by jobs that are actually running, where it differs.</p>"))
    sections.append(Section("Queue length over time", img(queue, "pending jobs over time")))
    by_size_rows = []
    for n in names:
        for label, b in summaries[n]["wait_by_size"].items():
            by_size_rows.append([n, size_label(label), f"{b['jobs']:,} of {b.get('submitted', b['jobs']):,}",
                                 *durations([b["wait_p50_s"], b["wait_p95_s"]])])
    sections.append(Section("Wait-time distribution", img(waits, "wait distribution") +
                            table(["policy", "job size", "jobs started (of submitted)", "wait p50",
                                   "wait p95"], by_size_rows) +
                            "<p>Waits are of started jobs; a size with none started shows n/a. "
                            "“&lt;1 GPU” are MIG slices and soft GPU shares.</p>"))
    return sections


def simulation_report(scenario_name: str, description: str, results: Mapping[str, SimResult],
                      summaries: Mapping[str, dict], horizon: float,
                      extra: list[Section] | None = None) -> str:
    sections = simulation_sections(results, summaries, horizon) + (extra or [])
    first = next(iter(results.values()))
    facts = f"{first.fleet_gpus:,} GPUs, {len(first.jobs):,} jobs, policies: {', '.join(results)}"
    subtitle = f"{description.strip()} — {facts}" if description.strip() else facts
    return render(f"Simulation: {scenario_name}", subtitle, sections)
