"""Report section of the serving simulation: designs, breaches against the floor, utilisation."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from gpufleet.report.html import Section, img, render, table
from gpufleet.report.plots import COLORS, to_png_b64


def demand_png(r: dict) -> str:
    t = np.asarray(r["series"]["t"], float) / 3600.0
    v = np.asarray(r["series"]["gpus"], float)
    keep = t < r["window_days"] * 24.0  # the window's end closes every instance: not a drop in demand
    t, v = t[keep], v[keep]
    fig, ax = plt.subplots(figsize=(8, 3.4))
    ax.step(t, v, where="post", color=COLORS[0], lw=0.9, label="dynamic serving GPUs (trace)")
    ax.axhline(r["pool_gpus"], color=COLORS[6], ls="--", label=f"pool {r['pool_gpus']}")
    best = r["floor_meeting_target"]
    if best is not None:
        ax.axhline(best["floor"], color=COLORS[2], ls=":", label=f"floor meeting target {best['floor']}")
    ax.set_xlabel("hour of the window")
    ax.set_ylabel("GPUs")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    return to_png_b64(fig)


def sweep_png(r: dict) -> str:
    sw = r["sweep"]
    f = [d["floor"] for d in sw]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.plot(f, [100 * d["breach_rate"] for d in sw], "o-", color=COLORS[1], label="late scale-ups %")
    ax.axhline(100 * r["breach_target"], color=COLORS[1], ls=":", lw=1, label="target")
    ax.set_xlabel("floor (GPUs never lent)")
    ax.set_ylabel("late scale-ups (%)")
    ax2 = ax.twinx()
    ax2.plot(f, [100 * d["total_util"] for d in sw], "s-", color=COLORS[2], label="pool utilisation %")
    ax2.set_ylabel("pool utilisation (%)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="center left")
    ax.grid(alpha=0.3)
    return to_png_b64(fig)


def design_rows(designs: list[dict]) -> list[list[object]]:
    return [[d["name"], d["floor"], f"{100 * d['serving_util']:.1f}%", f"{100 * d['training_util']:.1f}%",
             f"{100 * d['total_util']:.1f}%", f"{d['breaches']} / {d['replicas']}",
             f"{100 * d['breach_rate']:.2f}%", f"{d['ready_p99_s']:.0f} s", d["preemptions"],
             f"{d['lost_gpu_hours']:.1f}"] for d in designs]


HEADERS = ["design", "floor", "serving util", "training util", "pool util", "late / scale-ups", "late %",
           "ready p99", "reclaims", "lost GPU-h"]


def serving_sections(r: dict) -> list[Section]:
    best = r["floor_meeting_target"]
    best_txt = (f"The smallest floor in the sweep with at most {100 * r['breach_target']:.1f}% late "
                f"scale-ups is <b>{best['floor']} GPUs</b> of a {r['pool_gpus']}-GPU pool "
                f"(pool utilisation {100 * best['total_util']:.1f}%)." if best is not None
                else "No floor in the sweep meets the target.")
    parts = r["reclaim_parts_s"]
    rule = (f"<p>Reclaim time T<sub>r</sub> = detect {parts['detect']:g} s + max(grace {parts['grace']:g} s, "
            f"checkpoint write "
            f"{parts['checkpoint']:g} s) + eviction {parts['eviction']:g} s + model load "
            f"{parts['model_load']:g} s = {r['reclaim_s']:.0f} s; the "
            f"steepest 10-minute ramp in the window is {r['ramp_gpus_per_s'] * 600:.0f} GPUs "
            f"({r['ramp_gpus_per_s']:.4f} GPUs/s), so the headroom rule H ≥ r·T<sub>r</sub> + 1 asks for "
            f"{r['headroom_rule_gpus']} idle GPUs above the load. A replica is late when detect + wait + "
            f"eviction + model load exceeds the {r['slo_s']:.0f} s SLO. {best_txt}</p>")
    window = (f"<p>Window: days {r['start_day']:g}–{r['start_day'] + r['window_days']:g} of the trace; "
              f"{r['base_gpus']:,} GPU instances live through the whole window are a constant base in "
              f"every design and left out; the simulation replays the {r['dynamic_replicas']:,} instances "
              f"that start or stop in it (peak {r['dynamic_peak_gpus']}, median "
              f"{r['dynamic_median_gpus']:.0f} GPUs). Reclaiming is the engine's tenancy preemption.</p>")
    by_ck = table(["borrower's checkpoint", "reclaim time", "headroom H ≥ r·T_r + 1"],
                  [[x["checkpoint"], f"{x['reclaim_s']:.0f} s", f"{x['headroom_rule_gpus']} GPUs"]
                   for x in r["reclaim_by_checkpoint"]])
    return [
        Section("Serving designs", rule + table(HEADERS, design_rows(r["designs"])) + by_ck),
        Section("Floor sweep", img(sweep_png(r), "late scale-ups and utilisation against the floor")
                + table(HEADERS, design_rows(r["sweep"]))),
        Section("Serving demand", window + img(demand_png(r), "dynamic serving demand")),
    ]


def serving_report(r: dict, sources: dict[str, str]) -> str:
    src = table(["input", "source"], [[k, v] for k, v in sources.items()])
    return render("Serving: the inference floor and borrowing",
                  "Alibaba 2025 serving trace (cluster-trace-gpu-v2025), Yang et al., NSDI 2025",
                  [*serving_sections(r), Section("Inputs and sources", src)])
