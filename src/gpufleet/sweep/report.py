"""The sweep's HTML comparison: per setting, each policy's mean ± 95% t-interval across seeds, and
every pair of policies with its paired difference and Holm-adjusted p-value (sweep/stats.py)."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np
from markupsafe import Markup, escape

from gpufleet.report.fmt import duration, pct
from gpufleet.report.html import Section, img, render, table
from gpufleet.report.plots import COLORS, plt, to_png_b64
from gpufleet.studies.estimate import Estimate
from gpufleet.sweep.stats import paired_tests, t_interval

#: Metrics with no better direction. GPU allocation counts held GPUs, idle or working: a policy
#: that holds more is not better for it (the deadlocked per-pod run holds 100 % and does nothing;
#: gpu_busy_pct is the one that counts work). Counts of activity are neither good nor bad.
NO_DIRECTION = frozenset({
    "gpu_allocation_pct", "jobs_submitted", "submitted", "jobs", "cycles", "events", "estimates",
    "elastic_grows", "elastic_shrinks", "defrag_moves", "defrag_gpus_moved", "mig_reconfigurations",
    "spares_used", "window_s", "wait_jobs", "slowdown_jobs", "big_gang_jobs", "upgrade_jobs_drained",
    "upgrade_nodes_held_at_start"})
#: Words of metrics where a larger value is the better one (work done, jobs through).
HIGHER_IS_BETTER = ("busy", "goodput", "finished", "started", "unblocked", "recovered", "upgraded",
                    "utilization")
#: Words of metrics where a smaller value is the better one (time, loss, waste, failure).
LOWER_IS_BETTER = ("_s", "wait", "stranded", "queue", "lost", "cost", "fragmentation", "pending",
                   "unschedulable", "preemptions", "interruptions", "failures", "slowdown", "error",
                   "late", "blocked", "held", "hours", "failed", "no_spare", "rolled_back", "mismatch",
                   "too_old", "never")


def fmt_metric(name: str, v: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    base = name.split("[")[0]
    if base.endswith("_s"):
        return duration(v) if v >= 0 else "−" + duration(-v)
    if base.endswith("_pct"):
        return pct(v)
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.2f}"


def direction(metric: str) -> str | None:
    """"higher" or "lower" (the better way for ``metric``), or None: no better direction."""
    base = metric.split("[")[0]
    if base in NO_DIRECTION:
        return None
    if "never" in base:            # big_gang_never_started: fewer is better, whatever "started" says
        return "lower"
    if any(w in base for w in HIGHER_IS_BETTER):
        return "higher"
    if base.endswith("_s") or any(w in base for w in LOWER_IS_BETTER):
        return "lower"
    return None


def better_high(metric: str) -> bool:
    return direction(metric) == "higher"


def direction_text(metric: str) -> str:
    d = direction(metric)
    if d is None:
        return ("no better direction: held GPUs count idle ones" if metric.startswith("gpu_allocation")
                else "no better direction")
    return f"{d} is better"


def wider_than_mean(c: Estimate) -> bool:
    """The interval reaches past 0 on the far side of the mean (few seeds, a skewed metric)."""
    return c.n > 1 and not math.isnan(c.half_width) and c.half_width > abs(c.mean)


def time_unit(seconds: list[float]) -> tuple[float, str]:
    """(seconds per unit, unit) for a bar chart of durations: the largest mean decides, so
    waits of a few minutes are not drawn as 0.0x hours."""
    top = max((abs(v) for v in seconds if not math.isnan(v)), default=0.0)
    if top < 120:
        return 1.0, "seconds"
    if top < 2 * 3600:
        return 60.0, "minutes"
    if top < 2 * 86400:
        return 3600.0, "hours"
    return 86400.0, "days"


def setting_label(row: dict[str, Any], params: list[str]) -> str:
    parts = [str(row["scenario"])] + [f"{p}={row[p]}" for p in params]
    return ", ".join(parts)


def group_rows(rows: list[dict[str, Any]], params: list[str]) -> dict[str, dict[str, list[dict]]]:
    """setting label → policy → rows (one per seed), in the order rows first name them. Parameters
    with one value in the whole grid are left out of the labels (they tell settings nothing apart)."""
    params = [p for p in params if len({str(r.get(p)) for r in rows}) > 1]
    out: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        out[setting_label(r, params)][r["policy"]].append(r)
    return out


def _value(r: dict, metric: str) -> float:
    v = r.get(metric)
    return float(v) if isinstance(v, int | float) else math.nan


def setting_section(label: str, by_policy: dict[str, list[dict]], metrics: list[str]) -> Section:
    policies = list(by_policy)
    seeds = sorted({r["seed"] for rs in by_policy.values() for r in rs})
    body = [f"<p>{len(seeds)} seeds ({', '.join(map(str, seeds[:12]))}{'…' if len(seeds) > 12 else ''}); "
            "mean ± half-width of the 95% t-interval across seeds. The best mean is in bold, by the "
            "direction each metric states; a metric with no better direction (GPU allocation: held "
            "GPUs, idle or working) has no best.</p>"]
    rows, pair_rows = [], []
    wide = False
    for m in metrics:
        cis = {p: t_interval([_value(r, m) for r in by_policy[p]]) for p in policies}
        finite = {p: c.mean for p, c in cis.items() if not math.isnan(c.mean)}
        d = direction(m)
        best = (max if d == "higher" else min)(finite, key=finite.__getitem__) if finite and d else None
        if best is not None and sum(v == finite[best] for v in finite.values()) > 1:
            best = None  # a tie: nobody is best
        cells: list[object] = []
        for p in policies:
            c = cis[p]
            text = fmt_metric(m, c.mean) + (f" ± {fmt_metric(m, c.half_width)}" if c.n > 1 else "")
            if wider_than_mean(c):
                text += " †"
                wide = True
            cells.append(Markup(f"<b>{escape(text)}</b>") if p == best and len(finite) > 1 else text)
        rows.append([Markup(f"{escape(m)}<br><small>{escape(direction_text(m))}</small>"), *cells])
        tests = paired_tests({p: {r["seed"]: _value(r, m) for r in by_policy[p]} for p in policies})
        for t in tests:
            if t.n < 2:
                continue
            good = (t.mean_diff > 0) == better_high(m)
            if not (t.significant and t.mean_diff != 0):
                verdict: object = "not significant"
            elif direction(m) is None:
                verdict = f"{t.a} {'higher' if t.mean_diff > 0 else 'lower'} (neither is better)"
            else:
                verdict = Markup(f'<span class="{"good" if good else "bad"}">'
                                 f'{escape(t.a)} {"better" if good else "worse"}</span>')
            pair_rows.append([m, f"{t.a} − {t.b}", fmt_metric(m, t.mean_diff),
                              f"{t.p:.3g}", f"{t.p_holm:.3g}", verdict])
    body.append(table(["metric", *policies], rows))
    if wide:
        body.append("<p>† The interval is wider than the mean: it reaches below 0, which these metrics "
                    "cannot. Too few seeds, or a skewed metric (one seed far from the others); read the "
                    "paired tests below, not the interval. The charts cut such bars at 0.</p>")
    body.append("<p>Paired differences (same seeds, same workloads): two-sided paired t-test, "
                "p Holm-adjusted over the policy pairs of each metric; significant at 0.05.</p>")
    body.append(table(["metric", "pair", "mean difference", "p", "p (Holm)", "verdict"], pair_rows))
    return Section(label, "\n".join(body))


def overview_plot(grouped: dict[str, dict[str, list[dict]]], metric: str) -> str:
    """One panel: per setting, each policy's mean with its 95% interval as an error bar."""
    settings = list(grouped)
    policies = list(dict.fromkeys(p for g in grouped.values() for p in g))
    fig, ax = plt.subplots(figsize=(9, 3.2))
    width = 0.8 / max(1, len(policies))
    x = np.arange(len(settings))
    base, _, size = metric.partition("[")
    if base.endswith("_s"):
        scale, name = time_unit([_value(r, metric) for g in grouped.values()
                                 for rs in g.values() for r in rs])
        label = f"{base.removesuffix('_s')}{'[' + size if size else ''} ({name})"
    else:
        scale, label = 1.0, metric
    cut = False
    for i, p in enumerate(policies):
        cis: list[Estimate] = [t_interval([_value(r, metric) / scale for r in grouped[s].get(p, [])])
                               for s in settings]
        # A metric that cannot be negative gets its error bar cut at 0 in the picture (the tables
        # keep the symmetric t-interval, which with few skewed seeds can cross 0).
        low = [min(c.half_width, c.mean) if c.mean >= 0 else c.half_width for c in cis]
        cut = cut or any(wider_than_mean(c) for c in cis)
        ax.bar(x + i * width, [c.mean for c in cis], width, yerr=[low, [c.half_width for c in cis]],
               capsize=3, label=p, color=COLORS[i % len(COLORS)])
    ax.set_xticks(x + width * (len(policies) - 1) / 2)
    ax.set_xticklabels([s if len(s) < 40 else s[:38] + "…" for s in settings], rotation=12, fontsize=8)
    ax.set_ylabel(label)
    title = f"{metric} ({direction_text(metric)})"
    ax.set_title(title + ("; † bars cut at 0: interval wider than the mean" if cut else ""),
                 loc="left", fontsize=9)
    ax.legend(fontsize=8, ncols=min(4, len(policies)))
    ax.grid(axis="y", alpha=0.3)
    return to_png_b64(fig)


def sweep_report(name: str, description: str, rows: list[dict[str, Any]], params: list[str],
                 metrics: list[str], executor: str, reused: int = 0) -> str:
    grouped = group_rows(rows, params)
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    intro = (f"<p>{len(rows)} cells: {len(grouped)} setting(s) × {len(policies)} policies × seeds, "
             f"{len(rows) - reused} run now on {escape(executor)}, {reused} reused from earlier runs.</p>"
             '<div class="note">Each bar is a mean over seeds with its 95% t-interval. Two policies run '
             "on the same seeded workloads, so differences are tested seed by seed (paired), which is "
             "much sharper than comparing the intervals by eye.</div>")
    plots = "".join(f"<h3>{escape(m)}</h3>" + img(overview_plot(grouped, m), m) for m in metrics[:4])
    sections = [Section("Overview", intro + plots)]
    sections += [setting_section(label, by_policy, metrics) for label, by_policy in grouped.items()]
    return render(f"sweep {name}", description or f"{len(rows)} cells", sections)
