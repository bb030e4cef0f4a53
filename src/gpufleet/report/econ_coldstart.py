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
    ax.semilogy([wp["size_loss"]], [wp["simulated_p_cold"]], "o", color=COLORS[2],
                label=f"simulated P(cold) at N = {wp['size_loss']}")
    ax.axhline(plan["target"], color=COLORS[6], ls=":", label="target")
    ax.set_xlabel("warm instances N")
    ax.set_ylabel("probability")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return to_png_b64(fig)


def coldstart_page(plan: dict, sources: dict[str, str]) -> str:
    rows = [[v["name"], f"{v['total_s']:.1f}", f"{v['saves_s']:.1f}", f"{v['saves_pct']:.0f}%"]
            for v in plan["variants"]]
    links = [[lk["name"], f"{lk['seconds']:.2f}", lk["arithmetic"]] for lk in plan["variants"][0]["links"]]
    wp = plan["warm_pool"]
    pool = [["offered load A = λ·S", f"{wp['offered_erlangs']:.1f} erlangs"],
            ["warm instances for P(cold) < target (Erlang B)", f"{wp['size_loss']} (P = {wp['p_cold']:.4f})"],
            ["same, sized by seeded simulation", f"{wp['simulated_size']} "
             f"(simulated P(cold) at {wp['size_loss']}: {wp['simulated_p_cold']:.4f})"],
            ["warm instances for P(wait) < target (Erlang C)", f"{wp['size_wait']} (P = {wp['p_wait']:.4f})"],
            ["square-root staffing A + 2.326·√A", f"{wp['sqrt_staffing']:.1f}"],
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
