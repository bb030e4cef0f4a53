"""HTML page of `gpufleet plan sandboxes`: tiers, the tiered design and the alternatives."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from gpufleet.report.html import Section, img, render, table
from gpufleet.report.plots import COLORS, to_png_b64


def cost_png(plan: dict) -> str:
    names = list(plan["designs"])
    cpu = [plan["designs"][n]["hosts"]["cpu_host"] for n in names]
    gpu = [plan["designs"][n]["hosts"]["gpu_host"] for n in names]
    cost = [plan["designs"][n]["cost_per_hr"] for n in names]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.6))
    y = np.arange(len(names))
    a1.barh(y - 0.2, cpu, 0.4, color=COLORS[0], label="CPU hosts")
    a1.barh(y + 0.2, gpu, 0.4, color=COLORS[1], label="GPU hosts")
    a1.set_yticks(y, names, fontsize=8)
    a1.invert_yaxis()
    a1.set_xlabel("hosts")
    a1.legend(fontsize=8)
    a2.barh(y, cost, color=COLORS[2])
    a2.set_yticks(y, [""] * len(names))
    a2.invert_yaxis()
    a2.set_xlabel("$ per hour")
    for ax in (a1, a2):
        ax.grid(alpha=0.3, axis="x")
    return to_png_b64(fig)


def start(ms: float | None) -> str:
    return "not measured" if ms is None else f"{ms:g} ms"


def sandboxes_page(plan: dict, sources: dict[str, str]) -> str:
    tiers = [[t["tier"], t["isolation"], f"{t['overhead_mib']:g}", start(t["start_ms"]),
              ", ".join(t["gpu"]) or "none"] for t in plan["tiers"]]
    sections = [Section("Tiers", table(["tier", "isolation (1 shared kernel, 2 user-space kernel, 3 VM)",
                                        "overhead MiB", "start", "GPU access"], tiers)),
                Section("Designs compared", img(cost_png(plan), "hosts and cost per design"))]
    for name, d in plan["designs"].items():
        rows = [[p["cls"], f"{p['sessions']:,}", p["tier"], p["gpu"], p["host_type"], p["hosts"], p["binds"],
                 f"${p['cost_per_hr']:,.0f}"] for p in d["placements"]]
        rows.append(["total", "", "", "", "", sum(p["hosts"] for p in d["placements"]), "",
                     f"${d['cost_per_hr']:,.0f}"])
        sections.append(Section(name, table(["class", "sessions", "tier", "GPU", "host", "hosts", "binds",
                                             "$/hr"], rows)))
    src = table(["input", "source"], [[k, v] for k, v in sources.items()])
    sections.append(Section("Inputs and sources", src))
    return render("Sandbox tiers", f"{plan['sessions']:,} concurrent sessions", sections)
