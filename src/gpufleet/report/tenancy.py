"""Report sections for multi-tenant scenarios: the pooling arithmetic, victim choice, gaming.

Pooling: the same jobs under static partitions (each tenant only its nominal quota), a
free-for-all (no quotas, first come first served) and the four-layer policy. "Idle while jobs
waited" is ∫ free GPUs × [queue non-empty] dt over the arrival window, in GPU-hours: capacity a
policy left unused while someone was waiting for it.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
from markupsafe import Markup

from gpufleet.model.tenancy import Tenancy
from gpufleet.report.fmt import duration, pct
from gpufleet.report.html import Section, img, table
from gpufleet.report.plots import COLORS, to_png_b64
from gpufleet.report.tenancy_gaming import GamingResult, run_all
from gpufleet.report.tenancy_kueue import kueue_section
from gpufleet.sim.runner import SimResult

POOLING = ("static-partitions", "free-for-all", "tenancy")
VICTIMS = ("tenancy-naive-victims", "tenancy")


def idle_while_waiting_gpu_h(r: SimResult, window: float) -> float:
    t = np.asarray(r.recorder.t, float)
    if not t.size or window <= 0:
        return 0.0
    free = r.fleet_gpus - np.asarray(r.recorder.allocated, float)
    waiting = np.asarray(r.recorder.queued) > 0
    seg_end = np.minimum(np.append(t[1:], max(window, t[-1])), window)
    span = np.clip(seg_end - np.minimum(t, window), 0.0, None)
    return float((free * waiting * span).sum() / 3600.0)


def _bar_chart(groups: list[str], series: Mapping[str, list[float]], title: str, ylabel: str,
               log: bool = False) -> str:
    fig, ax = plt.subplots(figsize=(9, 3.2))
    x = np.arange(len(groups))
    width = 0.8 / max(1, len(series))
    for i, (name, vals) in enumerate(series.items()):
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, vals, width, label=name,
                      color=COLORS[i % len(COLORS)])
        ax.bar_label(bars, labels=[f"{v:,.1f}" for v in vals], fontsize=7, padding=1)
    ax.set_xticks(x, groups)
    if log:
        ax.set_yscale("symlog", linthresh=0.1)
    ax.set_ylabel(ylabel)
    ax.set_title(title, loc="left", fontsize=11)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(frameon=False, fontsize=9, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.margins(y=0.15)
    return to_png_b64(fig)


#: How each pooling policy decides, said only for the policies the run has.
POOLING_PROSE = {
    "static-partitions": "<em>Static partitions</em>: each tenant runs only inside its nominal quota.",
    "free-for-all": "<em>Free-for-all</em>: no quotas, first come first served.",
    "tenancy": "<em>Four-layer</em> (<code>tenancy</code>): guaranteed quota, borrowing of unused cohort "
               "capacity within limits, weighted dominant-share fair share with decayed usage, and "
               "checkpoint-aware reclaim preemption.",
}


def pooling_section(results: Mapping[str, SimResult], summaries: Mapping[str, dict], tenancy: Tenancy,
                    window: float) -> Section | None:
    """The pooling comparison, or None when the run has fewer than two of its policies (one row
    compares nothing: the kueue scenario runs ``tenancy`` beside ``kueue``, which has its own
    section)."""
    names = [n for n in POOLING if n in results]
    if len(names) < 2:
        return None
    tenants = sorted(t.name for t in tenancy.tenants)
    smallest = min(tenancy.tenants, key=lambda t: (t.nominal_gpus, t.name)).name
    rows: list[list[object]] = []
    for n in names:
        s = summaries[n]
        rows.append([n, pct(s["gpu_allocation_pct"]), f"{idle_while_waiting_gpu_h(results[n], window):,.0f}",
                     duration(s["wait_p95_s"]), duration(s["tenants"][smallest]["wait_p95_s"]),
                     pct(s["tenants"][smallest]["share_of_fleet_pct"])])
    head = table(["policy", "GPU allocation", "GPU-hours idle while jobs waited", "wait p95 (all)",
                  f"wait p95 ({smallest}, smallest)", f"{smallest} share of fleet"], rows)
    per_tenant: list[list[object]] = []
    for t in tenants:
        ent = summaries[names[0]]["tenants"][t]["entitlement_pct"]
        per_tenant.append([t, pct(ent), *[f"{duration(summaries[n]['tenants'][t]['wait_p50_s'])} / "
                                          f"{duration(summaries[n]['tenants'][t]['wait_p95_s'])} / "
                                          f"{pct(summaries[n]['tenants'][t]['share_of_fleet_pct'])}"
                                          for n in names]])
    tenant_table = table(["tenant", "entitlement", *[f"{n}: wait p50 / p95 / share" for n in names]],
                         per_tenant)
    waits = {n: [(summaries[n]["tenants"][t]["wait_p95_s"] or 0.0) / 3600 for t in tenants] for n in names}
    chart = (img(_bar_chart(tenants, waits, "Queue wait p95 per tenant (hours, lower is better)", "hours",
                            log=True), "wait p95 per tenant")
             if any(v > 0 for vals in waits.values() for v in vals)
             else "<p>No tenant's jobs waited under these policies (every wait p95 is 0): no chart.</p>")
    s = {n: summaries[n] for n in names}
    static, ffa, ours = (s.get(p) for p in POOLING)
    arith = ""
    if static and ffa and ours:
        fleet = results[names[0]].fleet_gpus
        idle = idle_while_waiting_gpu_h(results["static-partitions"], window)
        arith = (
            f"fleet = {fleet} GPUs; window = {window / 86400:.1f} days = "
            f"{fleet * window / 3600:,.0f} GPU-hours\n"
            f"static partitions: allocation {pct(static['gpu_allocation_pct'])}; "
            f"{idle:,.0f} GPU-hours sat idle in one "
            "tenant's partition while another tenant's jobs queued\n"
            f"free-for-all:      allocation {pct(ffa['gpu_allocation_pct'])}; "
            f"{idle_while_waiting_gpu_h(results['free-for-all'], window):,.0f} GPU-hours idle while work "
            "waited (gangs waiting for whole nodes), but "
            f"{smallest} waits p95 {duration(ffa['tenants'][smallest]['wait_p95_s'])} "
            "behind the big tenants' backlog\n"
            f"four-layer:        allocation {pct(ours['gpu_allocation_pct'])} (pooling: idle quota is "
            f"lent), {smallest} waits p95 {duration(ours['tenants'][smallest]['wait_p95_s'])} "
            f"(its guarantee is reclaimed within one cycle + {tenancy.grace_s:.0f} s grace); "
            f"cost: {ours['preemptions']} preemptions, {ours['lost_gpu_hours']:,.1f} GPU-hours of lost "
            f"work = {100 * ours['lost_gpu_hours'] * 3600 / (fleet * window):.2f}% of the window"
        )
    html = (
        f"<p>The same jobs under {len(names)} tenancy policies. "
        + " ".join(POOLING_PROSE[n] for n in names) + "</p>"
        + head + (f'<div class="arith">{arith}</div>' if arith else "") + chart + tenant_table
    )
    return Section("Tenancy: the pooling arithmetic", html)


def victim_section(summaries: Mapping[str, dict]) -> Section | None:
    names = [n for n in VICTIMS if n in summaries]
    if len(names) < 2:
        return None
    rows = []
    for n in names:
        s = summaries[n]
        per = s["lost_gpu_hours"] / s["preemptions"] if s["preemptions"] else 0.0
        rule = "naive: lowest priority, youngest first" if n == VICTIMS[0] else \
            "checkpoint-aware: least work lost first"
        rows.append([rule, f"{s['preemptions']:,}", f"{s['lost_gpu_hours']:,.1f}", f"{per:,.2f}",
                     duration(s["wait_p95_s"])])
    naive, ours = (summaries[n]["lost_gpu_hours"] for n in VICTIMS)
    verdict = (f'<span class="good">checkpoint-aware loses {naive - ours:,.1f} GPU-hours less '
               f"({100 * (1 - ours / naive):.0f}% less)</span>" if naive > 0 and ours < naive
               else '<span class="bad">checkpoint-aware did not lose less here</span>')
    labels = {VICTIMS[0]: "naive (lowest priority, youngest)", VICTIMS[1]: "checkpoint-aware"}
    chart = _bar_chart(["lost GPU-hours (same jobs, same policy, only the victim rule differs)"],
                       {labels[n]: [summaries[n]["lost_gpu_hours"]] for n in names},
                       "Victim choice: work thrown away by preemption", "GPU-hours")
    arith = ("cost of evicting a running gang v, noticed at t with grace g:\n"
             "  P = progress of v at t;  S = P if g ≥ checkpoint cost (it writes one on notice),\n"
             "      else ⌊P / interval⌋ × interval (its last periodic checkpoint)\n"
             "  lost(v) = GPUs(v) × (P − S + restart time)\n"
             "naive picks the youngest lowest-priority gang — often one that has not reached its first\n"
             "checkpoint; checkpoint-aware sorts candidates by lost(v), then priority, then youngest,\n"
             "releases whole gangs until the beneficiary fits, then reprieves any it did not need.")
    html = (f"<p>The same jobs, the same four-layer policy; only the victim rule differs. {verdict}.</p>"
            + table(["victim rule", "preemptions", "lost GPU-hours", "lost per preemption (GPU-h)",
                     "wait p95"], rows)
            + img(chart, "lost GPU-hours by victim rule") + f'<div class="arith">{arith}</div>')
    return Section("Preemption: which victims", html)


def fmt(v: float) -> str:
    return f"{round(v, 1) + 0.0:.1f}"


def signed(v: float) -> str:
    return f"{round(v, 1) + 0.0:+.1f}"


def gaming_section(results: list[GamingResult] | None = None) -> Section:
    results = results if results is not None else run_all()
    rows: list[list[object]] = []
    for g in results:
        c = g.case
        naive = g.gain("naive")
        ours = g.gain("ours")
        flags = "; ".join(f for fl in g.flags.values() for f in fl) or "—"
        cls = "good" if ours <= 0.05 * max(abs(naive), 1e-9) or ours < naive / 2 else "bad"
        rows.append([c.trick, c.measure,
                     f"{c.naive}: {fmt(g.outcome[('naive', False)])} → {fmt(g.outcome[('naive', True)])}",
                     Markup(f'<span class="bad">{signed(naive)}</span>'),
                     f"{fmt(g.outcome[('ours', False)])} → {fmt(g.outcome[('ours', True)])}",
                     Markup(f'<span class="{cls}">{signed(ours)}</span>'), flags])
    html = (
        "<p>Five tricks, each on a 48-GPU fleet shared by A (the gamer), B and C (nominal 16 GPUs "
        "each, one cohort). Each case runs A honest and A gaming, under a naive policy and under "
        "ours (<code>tenancy</code>; for under-stating, EASY backfill that plans with each tenant's "
        "estimate record, <code>gang-easy</code>, against one that trusts every estimate, "
        "<code>gang-easy-trusting</code>). <em>Gain</em> = how much better gaming left A (outcome gaming "
        "− outcome honest; for waits, the hours saved). Where the policy cannot take the gain away "
        "(A is within its own guarantee) a detector flags A.</p>"
        + table(["trick", "A's outcome", "naive: honest → gaming", "gain (naive)",
                 "ours: honest → gaming", "gain (ours)", "flagged"], rows)
        + "<p>Defences: quota caps what inflated requests and placeholders can hold to the "
        "tenant's guarantee, and reclaim takes back what they borrowed; dominant-share accounting "
        "charges GPUs, not jobs, so splitting buys no turns; priority counts only within a tenant "
        "and within its priority budget; reservation and backfill plan with each tenant's record "
        "of actual ÷ stated run time (median of its recent jobs), so a tenant whose jobs run 24× "
        "their estimates is planned at 24× and its short estimates buy nothing "
        "(sim/accuracy.py, CycleContext.planned_run).</p>"
    )
    return Section("Gaming a fair-share system", html)


def tenancy_sections(results: Mapping[str, SimResult], summaries: Mapping[str, dict], tenancy: Tenancy,
                     window: float) -> list[Section]:
    pooling = pooling_section(results, summaries, tenancy, window)
    out = [pooling] if pooling is not None else []
    v = victim_section(summaries)
    if v is not None:
        out.append(v)
    k = kueue_section(summaries, tenancy)
    if k is not None:
        out.append(k)
    out.append(gaming_section())
    return out
