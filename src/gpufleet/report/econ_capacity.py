"""HTML page of `gpufleet plan capacity`: the mix, the break-even and marginal argument, the plots."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from markupsafe import Markup

from gpufleet.econ.capacity import CapacityPlan, spot_classes
from gpufleet.report.html import Section, img, render, table
from gpufleet.report.plots import COLORS, to_png_b64


def money(x: float) -> str:
    return f"${x:,.0f}"


def cost_curve_png(plan: CapacityPlan) -> str:
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ax.plot(plan.levels, plan.cost_od_overflow / 1e3, color=COLORS[0], label="overflow on demand")
    if any(price < 1.0 for _, _, price in spot_classes(plan.demand, plan.prices)):
        ax.plot(plan.levels, plan.cost_spot_overflow / 1e3, color=COLORS[2],
                label="overflow on spot where eligible, else on demand")
    for q, label, c in ((plan.p50, "p50 rule", COLORS[3]),
                        (plan.newsvendor_level, "F⁻¹(1−c)", COLORS[1]),
                        (plan.mix.committed, "MILP optimum", COLORS[4])):
        ax.axvline(q, color=c, ls="--", lw=1, label=f"{label}: {q:,.0f} GPUs")
    ax.set_xlabel("committed baseline (GPUs)")
    ax.set_ylabel("cost over the window ($ thousand)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return to_png_b64(fig)


def demand_png(plan: CapacityPlan) -> str:
    d = plan.demand
    h = np.arange(d.hours)
    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.plot(h / 24, d.gpus, color=COLORS[6], lw=0.8, label="demand (hourly mean GPUs)")
    ax.fill_between(h / 24, 0, d.eligible, color=COLORS[2], alpha=0.25, label="spot-eligible part")
    ax.axhline(plan.mix.committed, color=COLORS[4], ls="--", label="committed (MILP)")
    ax.axhline(plan.p50, color=COLORS[3], ls=":", label="p50")
    if any(plan.mix.block_nodes):
        g = plan.prices.gpus_per_node
        blocks = np.array([plan.mix.block_nodes[i // plan.prices.block_hours] for i in h]) * g
        ax.plot(h / 24, plan.mix.committed + blocks, color=COLORS[5], label="committed + capacity blocks")
    ax.set_xlabel("day")
    ax.set_ylabel("GPUs")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    return to_png_b64(fig)


def spot_section(spot: dict) -> Section:
    rows = [[g["nodes"], f"{g['mtbi_min']:.0f} min",
             "saves in the notice" if g["tau_min"] is None else f"{g['tau_min']:.1f} min (Daly)",
             f"{g['overhead']:.1%}",
             "∞" if g["effective_price"] is None else f"{g['effective_price']:.2f}",
             "yes" if g["effective_price"] is not None and g["effective_price"] < 1 else "no"]
            for g in spot["gangs"]]
    text = (f"<p>Effective spot price p_eff = p_spot / (1 − overhead), a gang of n nodes interrupted at "
            f"M_node / n. Overhead δ/τ + (τ/2 + R)/M with Daly's interval τ, or (notice + R)/M when the "
            f"checkpoint write fits in the {spot['notice_s']:g} s notice (then {spot['loss']}). "
            f"{spot['break_even']}. The mix puts on spot only "
            f"demand from gangs of at most {spot['largest_gang_nodes_on_spot']} nodes; {spot['rule']}.</p>")
    return Section("Spot", text + table(["nodes", "gang MTBI", "checkpoint interval", "overhead",
                                         "p_eff × OD",
                                         "cheaper than on demand"], rows))


def capacity_page(plan: CapacityPlan, sources: dict[str, str], spot: dict | None = None) -> str:
    x = plan.as_dict()
    sol = x["solution"]
    gh = sol["gpu_hours"]
    p = plan.prices
    cost = sol["costs"]
    mix_rows = [["committed", f"{sol['committed_gpus']:,} GPUs", f"{gh['committed']:,.0f}",
                 money(cost["committed"])],
                ["capacity blocks", f"{sol['block_nodes_per_window']} nodes per window",
                 f"{gh['capacity_block']:,.0f}", money(cost["capacity_block"])],
                ["spot", "p_eff per gang size", f"{gh['spot']:,.0f}", money(cost["spot"])],
                ["on demand", "", f"{gh['on_demand']:,.0f}", money(cost["on_demand"])],
                ["total (MILP)", "", "", Markup(f"<b>{money(sol['cost'])}</b>")],
                ["all on demand", "", "", money(x["all_on_demand_cost"])]]
    marg = [[m["level"], f"{m['committed_gpus']:,.0f}", f"{m['used_fraction']:.3f}",
             "yes" if m["pays"] else "no"] for m in plan.marginal]
    rules = [[r["rule"], f"{r['committed_gpus']:,.0f}", f"{r['used_fraction']:.3f}", money(r["cost"]),
              r["cost_basis"]] for r in x["rules"]]
    why = (f"<p>Break-even utilisation u* = c = {p.committed_ratio:.2f}: a committed GPU pays when it is "
           f"busy more than {p.committed_ratio:.0%} of the hours. The k-th committed GPU is busy exactly "
           f"when demand exceeds k, so the last one worth buying sits where P(D &gt; q) = c, i.e. the "
           f"p{100 * (1 - p.committed_ratio):.0f} of hourly demand; the p50 rule is right only at "
           f"c = 0.5.</p>")
    src = table(["input", "source"], [[k, v] for k, v in sources.items()])
    sections = [
        Section("Mix", table(["tier", "level", "GPU-hours", "cost"], mix_rows)
                + f"<p>Solved by HiGHS (scipy.optimize.milp): {sol['status']} in {sol['solve_s']:.2f} s; "
                f"{x['saving_pct']:.1f}% below all on demand.</p>"),
        Section("Demand", img(demand_png(plan), "demand curve with the committed level")),
        Section("Cost against the baseline level", img(cost_curve_png(plan), "cost vs committed level")
                + table(["rule", "committed GPUs", "fraction of hours used", "$", "cost of"], rules)),
        Section("Marginal argument", why + table(
            ["percentile", "GPUs", "fraction of hours used", f"pays (> {p.committed_ratio:.2f})"], marg)),
        *([spot_section(spot)] if spot else []),
        Section("Inputs and sources", src),
    ]
    return render("Capacity mix", f"{plan.demand.name}: {plan.demand.hours} hours", sections)
