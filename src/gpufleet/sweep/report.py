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
from gpufleet.sweep.stats import Interval, paired_tests, t_interval

#: Metrics where a larger value is the better one; every other metric is better smaller (waits,
#: completion times, stranded GPUs, queue length...).
HIGHER_IS_BETTER = ("allocation", "busy", "finished", "started", "utilization")


def fmt_metric(name: str, v: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    base = name.split("[")[0]
    if base.endswith("_s"):
        return duration(v) if v >= 0 else "−" + duration(-v)
    if base.endswith("_pct"):
        return pct(v)
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.2f}"


def better_high(metric: str) -> bool:
    return any(w in metric for w in HIGHER_IS_BETTER)


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
            "mean ± half-width of the 95% t-interval across seeds. Best mean in bold.</p>"]
    rows, pair_rows = [], []
    for m in metrics:
        cis = {p: t_interval([_value(r, m) for r in by_policy[p]]) for p in policies}
        finite = {p: c.mean for p, c in cis.items() if not math.isnan(c.mean)}
        best = (max if better_high(m) else min)(finite, key=finite.__getitem__) if finite else None
        if best is not None and sum(v == finite[best] for v in finite.values()) > 1:
            best = None  # a tie: nobody is best
        cells: list[object] = []
        for p in policies:
            c = cis[p]
            text = fmt_metric(m, c.mean) + (f" ± {fmt_metric(m, c.half_width)}" if c.n > 1 else "")
            cells.append(Markup(f"<b>{escape(text)}</b>") if p == best and len(finite) > 1 else text)
        rows.append([m, *cells])
        tests = paired_tests({p: {r["seed"]: _value(r, m) for r in by_policy[p]} for p in policies})
        for t in tests:
            if t.n < 2:
                continue
            good = (t.mean_diff > 0) == better_high(m)
            verdict = (Markup(f'<span class="{"good" if good else "bad"}">'
                              f'{escape(t.a)} {"better" if good else "worse"}</span>')
                       if t.significant and t.mean_diff != 0 else "not significant")
            pair_rows.append([m, f"{t.a} − {t.b}", fmt_metric(m, t.mean_diff),
                              f"{t.p:.3g}", f"{t.p_holm:.3g}", verdict])
    body.append(table(["metric", *policies], rows))
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
    scale, unit = (3600.0, " (hours)") if metric.split("[")[0].endswith("_s") else (1.0, "")
    for i, p in enumerate(policies):
        cis: list[Interval] = [t_interval([_value(r, metric) / scale for r in grouped[s].get(p, [])])
                               for s in settings]
        # A metric that cannot be negative gets its error bar cut at 0 in the picture (the tables
        # keep the symmetric t-interval, which with few skewed seeds can cross 0).
        low = [min(c.half_width, c.mean) if c.mean >= 0 else c.half_width for c in cis]
        ax.bar(x + i * width, [c.mean for c in cis], width, yerr=[low, [c.half_width for c in cis]],
               capsize=3, label=p, color=COLORS[i % len(COLORS)])
    ax.set_xticks(x + width * (len(policies) - 1) / 2)
    ax.set_xticklabels([s if len(s) < 40 else s[:38] + "…" for s in settings], rotation=12, fontsize=8)
    ax.set_ylabel(metric + unit)
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
