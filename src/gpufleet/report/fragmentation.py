"""The report's fragmentation section: fractional GPUs, what fragmentation costs, what defrag buys.

Per policy: the fragmentation ratio and how many more 1/2/4/8-GPU jobs could start (time-weighted),
MIG reconfigurations, the defrag ledger (moves, GPUs moved, gangs unblocked and their GPUs — "GPUs
recovered" — against the cost paid in lost work and restarts), and the waits of the big gangs;
a plot of the 8-GPU schedulability over time. Definitions: sim/fragmentation.py, sim/metrics.py.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpufleet.report import plots
from gpufleet.report.fmt import NA, duration, durations, pct
from gpufleet.report.html import Section, img, table
from gpufleet.sim.metrics import BIG_GANG_GPUS, UNBLOCKED_WITHIN_S
from gpufleet.sim.runner import SimResult

#: (summary key, label, kind) rows for the terminal table.
FRAGMENTATION_ROWS: tuple[tuple[str, str, str], ...] = (
    ("fragmentation_ratio_avg", "fragmentation ratio (avg)", "ratio"),
    ("defrag_moves", "defrag moves", "int"),
    ("defrag_gpus_recovered", "GPUs recovered (gangs unblocked)", "gpus"),
    ("eviction_cost_gpu_hours", "cost paid (GPU-h lost + restarts)", "gpuh"),
    ("big_gang_wait_p50_s", f"big-gang (≥{BIG_GANG_GPUS} GPUs) wait p50", "dur"),
    ("big_gang_wait_p95_s", f"big-gang (≥{BIG_GANG_GPUS} GPUs) wait p95", "dur"),
)


def fmt_cell(v: float | None, kind: str) -> str:
    if v is None:
        return NA
    if kind == "ratio":
        return f"{v:.3f}"
    if kind == "dur":
        return duration(v)
    if kind == "gpuh":
        return f"{v:,.2f}"
    if kind == "gpus":
        return f"{v:,.1f}"
    return f"{int(v):,}"


def fmt_row(values: list, kind: str) -> list[str]:
    """A row's cells; durations share one unit across the row."""
    return durations(values) if kind == "dur" else [fmt_cell(v, kind) for v in values]


def defrag_tradeoffs(summaries: Mapping[str, dict]) -> str:
    """A paragraph when a defrag policy raises the fragmentation ratio or the big-gang median wait
    over the first policy without defrag, with the numbers and why (empty otherwise)."""
    base = next((n for n in summaries if "defrag" not in n), None)
    if base is None:
        return ""
    b = summaries[base]
    notes = []
    for n, s in summaries.items():
        if "defrag" not in n or "fragmentation_ratio_avg" not in s:
            continue
        worse = []
        if s["fragmentation_ratio_avg"] > b["fragmentation_ratio_avg"] + 0.005:
            worse.append(f"fragmentation ratio {b['fragmentation_ratio_avg']:.3f} → "
                         f"{s['fragmentation_ratio_avg']:.3f}")
        p50 = (b["big_gang_wait_p50_s"], s["big_gang_wait_p50_s"])
        if None not in p50 and p50[1] > p50[0] * 1.05:
            a, c = durations(list(p50))
            worse.append(f"big-gang median wait {a} → {c}")
        if worse:
            p95 = durations([b["big_gang_wait_p95_s"], s["big_gang_wait_p95_s"]])
            notes.append(f"<b>{n}</b> vs {base}: {', '.join(worse)}; big-gang p95 {p95[0]} → {p95[1]}")
    if not notes:
        return ""
    return ("<p><b>Why defrag can look worse here.</b> " + "; ".join(notes) + ". Defrag serves the "
            "<em>head</em> blocked gang, the tail of the wait distribution: the p95 is what it moves. The "
            "moved jobs requeue and are placed again, so gangs behind the head wait for that churn, which "
            "can raise the median. The fragmentation ratio is a share of the <em>free</em> capacity: when "
            "defrag empties a node and a gang takes it at once, what stays free is the leftover slivers, so "
            "the ratio of a smaller free pool can rise while more work runs (compare allocation and "
            "the 8-GPU schedulability plot). Judge defrag by the gangs it unblocks, their wait p95, and the "
            "cost paid.</p>")


def schedulability_plot(results: Mapping[str, SimResult], end: float) -> str:
    """8-GPU jobs that could start now, over time (binned time-weighted mean)."""
    fig, ax = plots.plt.subplots(figsize=(9, 3.2))
    scale, unit = plots.time_axis(end)
    for i, (name, r) in enumerate(results.items()):
        f = r.fragmentation
        if f is None or not f.t:
            continue
        x, y = plots.binned_step_mean(f.t, f.schedulable[8], end, bins=96)
        ax.plot(x / scale, y, lw=1.5, color=plots.COLORS[i % len(plots.COLORS)], label=name)
    ax.set_xlabel(f"simulated time ({unit})")
    ax.set_ylabel("8-GPU jobs that could start")
    ax.set_title("Whole free nodes over time: how many more 8-GPU pods fit", loc="left", fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=9)
    return plots.to_png_b64(fig)


def fragmentation_section(results: Mapping[str, SimResult], summaries: Mapping[str, dict],
                          horizon: float) -> Section:
    names = list(summaries)
    s = summaries

    def row(label: str, key: str, kind: str) -> list[object]:
        return [label, *fmt_row([s[n][key] for n in names], kind)]

    def shape(g: str) -> list[object]:
        return [f"{g}-GPU jobs that could start now (avg)",
                *[f"{s[n]['schedulable_by_shape_avg'][g]:.1f}" for n in names]]

    rows: list[list[object]] = [
        row("fragmentation ratio (time-weighted)", "fragmentation_ratio_avg", "ratio"),
        *[shape(g) for g in ("1", "2", "4", "8")],
        row("stranded GPUs (avg)", "stranded_gpus_avg", "gpus"),
        row("MIG reconfigurations", "mig_reconfigurations", "int"),
        row("defrag moves (eviction notices)", "defrag_moves", "int"),
        row("GPU-equivalents moved", "defrag_gpus_moved", "gpus"),
        row("gangs unblocked by defrag", "defrag_gangs_unblocked", "int"),
        row("GPUs recovered (their GPUs)", "defrag_gpus_recovered", "gpus"),
        row("cost paid: lost work + restarts (GPU-h)", "eviction_cost_gpu_hours", "gpuh"),
        row(f"big gangs (≥{BIG_GANG_GPUS} GPUs): wait p50", "big_gang_wait_p50_s", "dur"),
        row(f"big gangs (≥{BIG_GANG_GPUS} GPUs): wait p95", "big_gang_wait_p95_s", "dur"),
        row(f"big gangs (≥{BIG_GANG_GPUS} GPUs): wait max", "big_gang_wait_max_s", "dur"),
        row("queue wait p95 (all jobs)", "wait_p95_s", "dur"),
        ["GPU allocation (time-weighted)", *[pct(s[n]["gpu_allocation_pct"]) for n in names]],
    ]
    html = (
        "<p>Requests are whole GPUs, MIG instances (hardware partitions: two tenants may share a GPU) "
        "or soft shares — MPS, time-slicing, milli-GPU — which give no memory or fault isolation, so "
        "the engine never puts two tenants softly on one GPU. Mixed sizes fragment the fleet: the "
        "<b>fragmentation ratio</b> is the share of free GPU capacity (GPU-equivalents) that a pod "
        "drawn from the scenario's workload could not use (after FGD, Weng et al., ATC 2023); "
        "<b>jobs that could start</b> counts single-pod jobs of 1, 2, 4 and 8 whole GPUs that fit "
        "now.</p>"
        + table(["metric", *names], rows)
        + "<p><b>Defrag</b> moves running jobs (eviction notice, requeue, resume from checkpoint; "
          "stateless inference migrates in its restart time) so that the head blocked gang fits, "
          "and only when it then fits. <b>gang-defrag-naive</b> evicts the smallest jobs first; "
          "<b>gang-defrag</b> clears the nodes whose movers lose least work per gang pod freed, "
          "reprieves movers the gang does not need, and moves only jobs that fit again elsewhere. "
          "Both are held to the same disruption budget (GPU-equivalents evicted per trailing "
          f"hour). A gang counts as unblocked when it starts within {UNBLOCKED_WITHIN_S / 60:.0f} "
          "min of its first move notice; GPUs recovered are its GPUs.</p>"
        + defrag_tradeoffs(summaries)
        + img(schedulability_plot(results, horizon), "8-GPU schedulability over time")
    )
    return Section("Fractional GPUs and fragmentation", html)
