"""The queue-wait arithmetic: how far the start times promised to waiting jobs were off."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np

from gpufleet.report import plots
from gpufleet.report.fmt import duration
from gpufleet.report.html import Section, img, table
from gpufleet.sim.runner import SimResult


def estimate_errors(r: SimResult) -> np.ndarray:
    """Actual − estimated start (s) per job that got an estimate and started."""
    return np.array([r.starts[j] - t for j, t in sorted((r.estimates or {}).items()) if j in r.starts])


def _histogram(errors: Mapping[str, np.ndarray]) -> str:
    fig, ax = plt.subplots(figsize=(9, 3.2))
    hours = {n: e / 3600.0 for n, e in errors.items() if e.size}
    lo = min(float(np.percentile(h, 1)) for h in hours.values())
    hi = max(float(np.percentile(h, 99)) for h in hours.values())
    bins = np.linspace(min(lo, -0.5), max(hi, 0.5), 50)
    for i, (name, h) in enumerate(hours.items()):
        ax.hist(np.clip(h, bins[0], bins[-1]), bins=bins, histtype="step", lw=1.6,
                color=plots.COLORS[i % len(plots.COLORS)], label=f"{name} ({h.size} jobs)")
    ax.axvline(0, color="#57606a", lw=0.8, ls="--")
    ax.set_xlabel("actual start − estimated start (hours; < 0: earlier than estimated)")
    ax.set_ylabel("jobs")
    ax.set_title("Start-time estimate error", loc="left", fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=9)
    return plots.to_png_b64(fig)


def estimate_section(results: Mapping[str, SimResult], summaries: Mapping[str, dict]) -> Section | None:
    errors = {n: estimate_errors(r) for n, r in results.items() if r.estimates}
    errors = {n: e for n, e in errors.items() if e.size}
    if not errors:
        return None
    rows = []
    for n in errors:
        s = summaries[n]
        rows.append([n, s["estimates"], duration(s["estimate_error_p50_s"]),
                     duration(s["estimate_error_p90_s"]), f"{s['estimate_late_pct']:.0f}%",
                     ("+" if s["estimate_bias_s"] >= 0 else "−") + duration(abs(s["estimate_bias_s"]))])
    html = (
        "<p>When a job cannot start, the reservation schedule gives it an estimated start: the "
        "running jobs end by their estimates (stretched by their tenant's record of actual ÷ "
        "estimated run time), and the blocked jobs ahead of it take their reserved slots. The "
        "simulator keeps the first estimate each job got and compares it with when it really "
        "started.</p>"
        + img(_histogram(errors), "estimate error histogram")
        + table(["policy", "jobs with an estimate", "|error| p50", "|error| p90", "started later",
                 "mean error"], rows)
        + "<p>Estimates err early when jobs end before their estimates (users over-estimate: "
          "the bundled workload's estimates are 1–3× the true run time) and late when jobs "
          "that arrive later with higher priority, or new reservations, take the slot.</p>")
    return Section("Queue-wait arithmetic: start-time estimates", html)
