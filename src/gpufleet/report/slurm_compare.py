"""The `gpufleet slurm compare` report: one self-contained HTML page and a JSON file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from gpufleet.adapters.slurm.compare import by_kind, kendall_tau_b, pair_agreement
from gpufleet.adapters.slurm.compare_run import Comparison
from gpufleet.report.html import Section, img, render, table
from gpufleet.report.plots import COLORS, to_png_b64


def start_scatter(cmp: Comparison) -> str:
    fig, ax = plt.subplots(figsize=(5.6, 5.0))
    s = np.array([f.slurm_start for f in cmp.facts])
    m = np.array([f.sim_start for f in cmp.facts])
    nodes = np.array([f.nodes for f in cmp.facts])
    for i, n in enumerate(sorted(set(nodes.tolist()))):
        sel = nodes == n
        ax.scatter(s[sel], m[sel], s=14, alpha=0.75, color=COLORS[i % len(COLORS)], label=f"{n} node(s)")
    hi = float(max(s.max(initial=1), m.max(initial=1)))
    ax.plot([0, hi], [0, hi], color="#57606a", lw=0.8, ls="--")
    ax.set_xlabel("Slurm start (s after first submit)")
    ax.set_ylabel("simulated start (s)")
    ax.set_title("Each job's start: Slurm vs our simulator", loc="left", fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    return to_png_b64(fig)


def diff_histogram(cmp: Comparison) -> str:
    fig, ax = plt.subplots(figsize=(5.6, 3.2))
    d = np.array([f.diff for f in cmp.facts])
    if len(d):
        ax.hist(d, bins=np.arange(np.floor(d.min()) - 0.5, np.ceil(d.max()) + 1.5, 1.0), color=COLORS[0])
    ax.set_xlabel("simulated start − Slurm start (s); < 0: we start earlier")
    ax.set_ylabel("jobs")
    ax.set_title("Per-job start (= wait) difference", loc="left", fontsize=11)
    ax.grid(alpha=0.3)
    return to_png_b64(fig)


def summary_rows(cmp: Comparison, meta: dict[str, Any]) -> list[list[object]]:
    a = cmp.agreement
    return [
        ["jobs compared", a.jobs],
        ["Kendall tau-b of start times", f"{a.kendall_tau_b:.3f}"],
        ["job pairs in Slurm's order", f"{a.pair_agreement:.1%}"],
        ["|wait difference| median / p95 / max", f"{a.waits.median_abs:.1f} / {a.waits.p95_abs:.1f} / "
                                                 f"{a.waits.max_abs:.1f} s"],
        ["mean signed difference (sim − Slurm)", f"{a.waits.mean_signed:+.1f} s"],
        ["starts within 1 s / 5 s", f"{a.within_1s:.0%} / {a.within_5s:.0%}"],
        ["makespan Slurm / simulated", f"{cmp.slurm_makespan_s:.0f} / {cmp.sim_makespan_s:.0f} s"],
        ["jobs Slurm did not end COMPLETED", "; ".join(f"{k}: {len(v)} ({', '.join(v[:5])}"
                                                       + (", ..." if len(v) > 5 else "") + ")"
                                                       for k, v in cmp.slurm_states.items()) or "none"],
        ["job kind that disagrees most", _worst_kind(cmp)],
        ["policy", cmp.profile],
        ["wall time (submit + drain + replay)", f"{meta.get('wall_s', 0):.1f} s"],
    ]


def _worst_kind(cmp: Comparison) -> str:
    kinds = by_kind(cmp.facts)
    if not kinds:
        return "-"
    k = kinds[0]
    return (f"{k.kind}: median |diff| {k.median_abs_s:.1f} s, {k.off_by_5s:.0%} of its {k.jobs} jobs "
            f"more than 5 s off, mean {k.mean_signed_s:+.1f} s")


def kind_rows(cmp: Comparison) -> list[list[object]]:
    return [[k.kind, k.jobs, f"{k.median_abs_s:.1f}", f"{k.mean_signed_s:+.1f}", f"{k.off_by_5s:.0%}"]
            for k in by_kind(cmp.facts)]


def build_html(cmp: Comparison, meta: dict[str, Any]) -> str:
    p = cmp.priority
    dis = [[f.job_id, f.slurm_id, f"{f.nodes}×{f.gpus_per_node}", f"{f.submit:.0f}", f"{f.slurm_start:.0f}",
            f"{f.sim_start:.0f}", f"{f.diff:+.0f}", why] for f, why in cmp.agreement.disagreements]
    setup = [
        ["cluster", meta.get("cluster", "")],
        ["workload", meta.get("workload", "")],
        ["priority", f"W_partition {p.weight_partition:.0f} + W_size {p.weight_size:.0f}·(nodes/{p.nodes} + "
                     f"cpus/{p.cpus})/2 + W_age {p.weight_age:.0f}·min(age/{p.max_age_s:.0f} s, 1), "
                     f"recomputed every {p.calc_period_s:.0f} s"],
        ["replay", "Slurm's submit times (ours to the millisecond within sacct's second), Slurm's elapsed "
                   "run times, Slurm's time limits as estimates; one scheduling pass per bf_interval"],
        ["command", meta.get("command", "")],
    ]
    notes = ("<p>Known differences that no policy setting removes: sacct times are whole seconds; Slurm "
             "launches ≈40–50 jobs/s on this box and starts batch jobs from the backfill pass "
             "(bf_interval) or the main scheduler (batch_sched_delay, sched_min_interval), not at the "
             "instant of submission; its backfill plan rounds to bf_resolution (60 s); its node choice "
             "(cons_tres, topology/tree) differs from our best fit, which changes later holes.</p>")
    sections = [
        Section("Agreement", table(["measure", "value"], summary_rows(cmp, meta))),
        Section("Starts", img(start_scatter(cmp), "Slurm start vs simulated start")
                + img(diff_histogram(cmp), "histogram of start differences")),
        Section("Which job kinds disagree most", table(
            ["job kind", "jobs", "median |diff| s", "mean diff s (sim − Slurm)", "> 5 s off"],
            kind_rows(cmp))),
        Section("Biggest disagreements", table(["job", "Slurm id", "nodes×GPUs", "submit", "Slurm start",
                                                "sim start", "diff s", "likely cause"], dis) + notes),
        Section("Setup", table(["", ""], setup)),
    ]
    return render("Slurm vs simulator", f"{cmp.agreement.jobs} jobs on a real emulated Slurm, replayed "
                  f"with {cmp.profile}", sections)


def write_report(cmp: Comparison, meta: dict[str, Any], out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    html_path, json_path = out / "report.html", out / "compare.json"
    html_path.write_text(build_html(cmp, meta))
    data = {**cmp.agreement.as_dict(), "policy": cmp.profile, "slurm_makespan_s": cmp.slurm_makespan_s,
            "slurm_states": {k: list(v) for k, v in cmp.slurm_states.items()},
            "by_kind": [{"kind": k.kind, "jobs": k.jobs, "median_abs_s": round(k.median_abs_s, 2),
                         "mean_signed_s": round(k.mean_signed_s, 2), "off_by_5s": round(k.off_by_5s, 4)}
                        for k in by_kind(cmp.facts)],
            "sim_makespan_s": cmp.sim_makespan_s, "left_out": list(cmp.left_out), **meta,
            "starts": [{"job": f.job_id, "slurm_id": f.slurm_id, "submit": f.submit, "slurm": f.slurm_start,
                        "sim": f.sim_start} for f in cmp.facts]}
    json_path.write_text(json.dumps(data, indent=1, sort_keys=True))
    return html_path, json_path


def actual_vs_simulated(actual: dict[str, Any], starts: dict[str, dict[str, float]]
                        ) -> list[list[object]]:
    """Rows (who, jobs, wait median / p95 / mean in s, pairs in Slurm's order) for what Slurm did
    with a trace's jobs and for each simulated policy, over the jobs that started on both sides.

    ``actual``: job id -> ActualRun (traces/slurm_sacct.read_actual); ``starts``: policy -> job id ->
    simulated start. Wait = start − submit; pair agreement as in adapters/slurm/compare.py.
    """
    def stats(waits: np.ndarray) -> list[object]:
        if not len(waits):
            return ["-", "-", "-"]
        return [f"{np.median(waits):.0f}", f"{np.percentile(waits, 95):.0f}", f"{waits.mean():.0f}"]

    all_ids = sorted(actual)
    rows: list[list[object]] = [["Slurm (what it did)", len(all_ids),
                                 *stats(np.array([actual[j].start - actual[j].submit for j in all_ids])),
                                 "1.000", "100%"]]
    for name, sim in starts.items():
        ids = [j for j in all_ids if j in sim]
        real = np.array([actual[j].start for j in ids])
        ours = np.array([sim[j] for j in ids])
        waits = ours - np.array([actual[j].submit for j in ids])
        tau = kendall_tau_b(real.tolist(), ours.tolist()) if len(ids) > 1 else float("nan")
        agree = pair_agreement(real.tolist(), ours.tolist()) if len(ids) > 1 else float("nan")
        rows.append([name, len(ids), *stats(waits), "-" if np.isnan(tau) else f"{tau:.3f}",
                     "-" if np.isnan(agree) else f"{agree:.0%}"])
    return rows


ACTUAL_COLUMNS = ("schedule", "jobs", "wait p50 s", "wait p95 s", "wait mean s", "Kendall tau vs Slurm",
                  "pairs in Slurm's order")
