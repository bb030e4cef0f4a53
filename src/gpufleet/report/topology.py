"""The report's topology section: what each placement policy's placements cost, in numbers.

Per policy: how many training jobs were slowed and by how much (mean, p95), the GPU-hours the
slowdowns burned, mean job completion time and utilisation; a plot of the slowdown distribution;
and the bandwidth arithmetic of the seed case (a TP=8 job split 4 + 4 over two nodes).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from gpufleet.model.fleet import Fabric, NodeGroup, build_fleet
from gpufleet.model.parallelism import LLAMA_70B, Parallelism
from gpufleet.policies.steptime import StepBreakdown, step_time
from gpufleet.report import plots
from gpufleet.report.fmt import duration, pct
from gpufleet.report.html import Section, img, table
from gpufleet.sim.runner import SimResult

#: (summary key, label, kind) rows the terminal prints when a run has slowdowns.
TOPOLOGY_ROWS: tuple[tuple[str, str, str], ...] = (
    ("slowdown_mean", "training-job slowdown (mean)", "x"),
    ("slowdown_p95", "training-job slowdown (p95)", "x"),
    ("slowdown_jobs_over_1_1", "training jobs slowed > 1.1x", "int"),
)

BLIND_NOTE = (
    "<p><b>topology-blind</b> is gang all-or-nothing with best-fit packing (fewest free GPUs first) "
    "and random tie-breaks from the cycle's seeded generator: a gang scheduler whose scores do not "
    "see leaves or NVLink domains (kube-scheduler with a gang plugin and MostAllocated, Slurm's "
    "cons_tres without topology/tree). It packs exactly as well as the aware placer, so the gap "
    "between them is topology alone. <b>gang-bestfit</b> is the same packing but keeps a gang in one "
    "leaf when it can; it does not know TP groups. <b>topology-aware</b> keeps every TP group in one "
    "NVLink domain, a pipeline's stages together, the gang at the tightest level that holds it, and "
    "waits for a whole-TP placement when the expected wait costs less than the slowdown.</p>"
)


def fmt_x(v: float) -> str:
    return f"{v:.2f}x"


def slowdown_values(r: SimResult) -> np.ndarray:
    """Modelled slowdowns of the jobs that have a parallel layout and a training profile."""
    if not r.slowdowns:
        return np.zeros(0)
    return np.array([f for j, f in sorted(r.slowdowns.items())
                     if r.jobs[j].parallelism is not None and r.jobs[j].training is not None])


def lost_gpu_hours(r: SimResult) -> float:
    """GPU-hours spent on slowdowns: sum over started jobs of (factor - 1) x run time x GPUs."""
    if not r.slowdowns:
        return 0.0
    return sum((f - 1.0) * r.jobs[j].run_time * r.jobs[j].total_gpus
               for j, f in r.slowdowns.items()) / 3600.0


def slowdown_plot(results: Mapping[str, SimResult]) -> str:
    """Survival of per-job slowdown: the fraction of training jobs slower than x."""
    fig, ax = plots.plt.subplots(figsize=(9, 3.4))
    top = 1.5
    for i, (name, r) in enumerate(results.items()):
        sd = np.sort(slowdown_values(r))
        if not sd.size:
            continue
        top = max(top, float(sd[-1]) * 1.05)
        y = 1.0 - np.arange(1, sd.size + 1) / sd.size
        slowed = 100.0 * (sd > 1.1).mean()
        ax.step(np.concatenate([[1.0], sd]), np.concatenate([[1.0], y]), where="post", lw=1.6,
                color=plots.COLORS[i % len(plots.COLORS)], label=f"{name} ({slowed:.0f}% slowed > 1.1x)")
    ax.set_xlim(1.0, top)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("slowdown of the placement the job got (run time / run time at the ideal placement)")
    ax.set_ylabel("fraction of training jobs slower")
    ax.set_title("Training-job slowdown: who runs how much slower than ideal", loc="left", fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=9)
    return plots.to_png_b64(fig)


def seed_case(fabric: Fabric | None = None) -> tuple[StepBreakdown, StepBreakdown]:
    """Llama-2-70B, TP=8 on H100: one HGX node versus 4 + 4 on two nodes of one leaf."""
    fleet = build_fleet([NodeGroup(nodes=2, gpu="H100-80GB")], fabric)
    par = Parallelism(tp=8)
    one = [fleet.nodes[0]] * 8
    split = [fleet.nodes[0]] * 4 + [fleet.nodes[1]] * 4
    return (step_time(one, LLAMA_70B, par, fleet.fabric), step_time(split, LLAMA_70B, par, fleet.fabric))


def seed_arithmetic() -> str:
    packed, split = seed_case()
    p = LLAMA_70B
    msg_mb = p.micro_batch * p.seq_len * p.hidden * p.act_bytes / 1e6
    calls = 4 * p.layers * packed.micro_batches
    return (
        f"Llama-2-70B (P = 69e9, L = {p.layers}, h = {p.hidden}, s = {p.seq_len}), TP = 8 on 8 H100, "
        f"{packed.micro_batches} micro-batches of 1 sequence per step\n\n"
        f"compute     6 x 69e9 x 4096 / (8 x 989 TFLOP/s x MFU 0.5) x {packed.micro_batches}"
        f"  = {packed.compute_s:7.1f} s   (both placements)\n"
        f"TP traffic  4 all-reduces x {p.layers} layers x {packed.micro_batches} = {calls:,} per step,\n"
        f"            each {msg_mb:.1f} MB; a ring over 8 moves 2 x 7/8 x {msg_mb:.1f} = "
        f"{msg_mb * 1.75:.1f} MB per rank (+ 14 hops of latency)\n"
        f"  one node  NVLink 450 GB/s x 370/450   = {packed.tp_gbs:5.1f} GB/s  -> {packed.tp_s:7.1f} s\n"
        f"  4 + 4     one NDR rail 50 GB/s x 0.93 = {split.tp_gbs:5.1f} GB/s  -> {split.tp_s:7.1f} s\n\n"
        f"step        one node {packed.step_s:7.1f} s    4 + 4 {split.step_s:7.1f} s    "
        f"slowdown {split.step_s / packed.step_s:.2f}x\n"
        "Same job, same GPU count: the split one runs its per-layer all-reduces at fabric speed,\n"
        "8x slower than NVLink, and spends more time talking than computing."
    )


def topology_section(results: Mapping[str, SimResult], summaries: Mapping[str, dict]) -> Section:
    names = [n for n, r in results.items() if r.slowdowns is not None]
    headers = ["metric", *names]
    rows: list[list[object]] = [
        ["training jobs with a modelled slowdown", *[f"{summaries[n]['slowdown_jobs']:,}" for n in names]],
        ["slowdown, mean", *[fmt_x(summaries[n]["slowdown_mean"]) for n in names]],
        ["slowdown, p95", *[fmt_x(summaries[n]["slowdown_p95"]) for n in names]],
        ["jobs slowed more than 1.1x", *[f"{summaries[n]['slowdown_jobs_over_1_1']:,}" for n in names]],
        ["GPU-hours burned by slowdowns", *[f"{lost_gpu_hours(results[n]):,.0f}" for n in names]],
        ["job completion time (mean, all jobs)", *[duration(summaries[n]["jct_mean_s"]) for n in names]],
        ["queue wait p95", *[duration(summaries[n]["wait_p95_s"]) for n in names]],
        ["GPU allocation (time-weighted)", *[pct(summaries[n]["gpu_allocation_pct"]) for n in names]],
    ]
    base = names[0]
    if len(names) > 1 and (summaries[base]["jct_mean_s"] or 0) > 0:
        rows.append([f"mean JCT vs {base}", *[
            f"{summaries[n]['jct_mean_s'] / summaries[base]['jct_mean_s']:.2f}"
            if summaries[n]["jct_mean_s"] is not None else "n/a" for n in names]])
    html = (
        "<p>A training job's trace run time is its run time at the ideal placement; the simulator "
        "stretches it by the modelled slowdown of the placement it actually got (step-time model: "
        "each TP group, pipeline hop and gradient group at the slowest link it crosses). Jobs "
        "without a parallel layout run at their trace time.</p>"
        + table(headers, rows)
        + "<p>Higher GPU allocation is not better here: a slowed job holds its GPUs longer for the "
          "same work, so a placement that wastes bandwidth looks busier while finishing less.</p>"
        + img(slowdown_plot({n: results[n] for n in names}), "slowdown distribution")
        + BLIND_NOTE
        + "<h3>The bandwidth arithmetic: one TP=8 job, packed or split 4 + 4</h3>"
        + f'<div class="arith">{seed_arithmetic()}</div>'
        + "<p>Reproduce with <code>gpufleet topology explain --tp 8 --split 4+4</code>; the benchmark "
          "is <code>python bench/topology.py</code>.</p>"
    )
    return Section("Topology: what placement costs", html)
