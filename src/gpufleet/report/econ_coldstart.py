"""HTML page of `gpufleet plan coldstart`: the chain per variant, the warm-pool curve."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from gpufleet.econ.queueing import erlang_b, erlang_c
from gpufleet.report.html import Section, img, render, table
from gpufleet.report.plots import COLORS, to_png_b64

LINK_ORDER = ("image pull", "container start", "weight load", "CUDA/engine init", "snapshot restore",
              "first token")


def chain_png(plan: dict) -> str:
    vs = plan["variants"]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    y = np.arange(len(vs))
    left = np.zeros(len(vs))
    for i, name in enumerate(LINK_ORDER):
        vals = np.array([sum(lk["seconds"] for lk in v["links"] if lk["name"] == name) for v in vs])
        if vals.any():
            ax.barh(y, vals, left=left, color=COLORS[i % len(COLORS)], label=name)
            left += vals
    ax.set_yticks(y, [v["name"] for v in vs])
    ax.invert_yaxis()
    ax.set_xlabel("seconds to first token")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="x")
    return to_png_b64(fig)


def pool_png(plan: dict) -> str:
    wp = plan["warm_pool"]
    a = wp["offered_erlangs"]
    ns = np.arange(max(1, int(a * 0.8)), int(wp["size_wait"] * 1.15) + 2)
    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.semilogy(ns, [erlang_b(int(n), a) for n in ns], color=COLORS[0], label="P(cold) = Erlang B")
    ax.semilogy(ns, [erlang_c(int(n), a) for n in ns], color=COLORS[1], label="P(wait) = Erlang C")
    n = wp["size_loss"]
    sims = [(k, e) for k, e in ((n - 1, wp["simulated_p_cold_one_fewer"]), (n, wp["simulated_p_cold"])) if e]
    lo = [e["mean"] - e["ci_low"] for _, e in sims]
    hi = [e["ci_high"] - e["mean"] for _, e in sims]
    ax.errorbar([k for k, _ in sims], [e["mean"] for _, e in sims], yerr=[lo, hi],
                fmt="o", color=COLORS[2], capsize=3, label="simulated P(cold), 95% interval over seeds")
    ax.axhline(plan["target"], color=COLORS[6], ls=":", label="target")
    ax.set_xlabel("warm instances N")
    ax.set_ylabel("probability")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return to_png_b64(fig)


def _ci(est: dict) -> str:
    half = (est["ci_high"] - est["ci_low"]) / 2
    return f"{100 * est['mean']:.3f}% ± {100 * half:.3f}%"


def pool_check_rows(wp: dict, seeds: int | None = None, arrivals: int | None = None) -> list[list[str]]:
    """The simulated check, as the terminal and the HTML page both print it: P(cold) at N − 1 and
    at N with 95% intervals over seeds, beside Erlang B, and the size the simulation resolves."""
    n = wp["size_loss"]
    runs = f"{wp['simulated_p_cold']['seeds']} seeds" if seeds is None else f"{seeds} seeds"
    if arrivals is not None:
        runs += f" × {arrivals:,} arrivals"
    rows = []
    for k, est, b in ((n - 1, wp["simulated_p_cold_one_fewer"], wp["p_cold_one_fewer"]),
                      (n, wp["simulated_p_cold"], wp["p_cold"])):
        if est:
            inside = est["ci_low"] <= b <= est["ci_high"]
            rows.append([f"simulated P(cold) at N = {k} ({runs})",
                         f"{_ci(est)} (Erlang B {100 * b:.3f}%: {'inside' if inside else 'OUTSIDE'})"])
    size = wp["simulated_size"]
    verdict = "agrees with Erlang B" if wp["simulated_agrees"] else "Erlang B outside an interval"
    rows.append(["warm instances (simulation)", f"{size} ({verdict})" if size is not None
                 else "not resolved at this many seeds/arrivals"])
    return rows


def coldstart_page(plan: dict, sources: dict[str, str]) -> str:
    rows = [[v["name"], f"{v['total_s']:.1f}", f"{v['saves_s']:.1f}", f"{v['saves_pct']:.0f}%"]
            for v in plan["variants"]]
    links = [[lk["name"], f"{lk['seconds']:.2f}", lk["arithmetic"]] for lk in plan["variants"][0]["links"]]
    wp = plan["warm_pool"]
    pool = [["offered load A = λ·S", f"{wp['offered_erlangs']:.1f} erlangs"],
            ["warm instances for P(cold) < target (Erlang B)", f"{wp['size_loss']} (P = {wp['p_cold']:.4f})"],
            *pool_check_rows(wp),
            ["warm instances for P(wait) < target (Erlang C)", f"{wp['size_wait']} (P = {wp['p_wait']:.4f})"],
            [f"square-root staffing A + {wp['z']:.3f}·√A (z = Φ⁻¹(1 − target))",
             f"{wp['sqrt_staffing']:.1f}"],
            ["pool cost", f"${wp['cost_per_hr']:,.0f}/hr at {wp['utilisation']:.0%} utilisation"],
            ["expected time to first token", f"{wp['expected_latency_s']:.2f} s"],
            ["spare for a burst during one cold start (p99 Poisson)", f"{wp['burst_spare_cold']} requests"],
            ["same with snapshot restores", f"{wp['burst_spare_snapshot']} requests"]]
    sections = [
        Section("Chain and removals", img(chain_png(plan), "time to first token per variant")
                + table(["variant", "seconds", "saves (s)", "saves"], rows)),
        Section("Cold chain, link by link", table(["link", "seconds", "arithmetic"], links)),
        Section("Warm pool", img(pool_png(plan), "Erlang B and C against pool size")
                + table(["quantity", "value"], pool)),
        Section("Inputs and sources", table(["input", "source"], [[k, v] for k, v in sources.items()])),
    ]
    return render("Serverless cold start", f"a {plan['weights_gb']:g} GB model", sections)
