"""Plots for reports: matplotlib (Agg), returned as base64 PNG so the HTML stays self-contained."""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from gpufleet.report.fmt import duration  # noqa: E402

COLORS = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bc4c00", "#57606a")


def to_png_b64(fig: plt.Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def binned_step_mean(t: Sequence[float], v: Sequence[float], end: float, bins: int = 336
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Time-weighted mean of a piecewise-constant series over equal bins of [0, end]."""
    if not len(t) or end <= 0:
        return np.zeros(0), np.zeros(0)
    edges = np.linspace(0.0, end, bins + 1)
    times = np.asarray(t, float)
    vals = np.asarray(v, float)
    seg_end = np.append(times[1:], max(end, times[-1]))
    out = np.zeros(bins)
    for i in range(bins):
        lo = np.clip(times, edges[i], edges[i + 1])
        hi = np.clip(seg_end, edges[i], edges[i + 1])
        out[i] = (vals * (hi - lo)).sum() / (edges[i + 1] - edges[i])
    return (edges[:-1] + edges[1:]) / 2, out


def time_axis(end: float) -> tuple[float, str]:
    """(seconds per unit, unit) for a time axis: hours up to two days, days beyond, so a 2-hour
    run is not drawn on an axis of 0.00 … 0.08 days."""
    return (3600.0, "hours") if end <= 2 * 86400 else (86400.0, "days")


def time_series(series: Mapping[str, tuple[Sequence[float], Sequence[float]]], end: float, title: str,
                ylabel: str, ymax: float | None = None, hline: float | None = None, bins: int = 336) -> str:
    """Binned time-weighted means; the title says the bin width ("means over 1.0 h")."""
    fig, ax = plt.subplots(figsize=(9, 3.2))
    scale, unit = time_axis(end)
    for i, (name, (t, v)) in enumerate(series.items()):
        x, y = binned_step_mean(t, v, end, bins)
        ax.plot(x / scale, y, label=name, color=COLORS[i % len(COLORS)], lw=1.4)
    if hline is not None:
        ax.axhline(hline, color="#57606a", ls="--", lw=0.8)
    ax.set_xlabel(f"simulated time ({unit})")
    ax.set_ylabel(ylabel)
    shown = f"{title} (means over {duration(end / bins)})" if end > 0 else title
    ax.set_title(shown, loc="left", fontsize=11)
    if ymax is not None:
        ax.set_ylim(0, ymax)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=9)
    return to_png_b64(fig)


def survival_steps(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The curve "fraction of jobs that waited longer than x" as step vertices (``where="post"``).

    With k waits above 0 among n, sorted x_1 ≤ … ≤ x_k, the fraction is k/n left of x_1 and drops
    by 1/n at each x_i. The curve starts a decade left of x_1 at k/n, so the last level (1/n on
    [x_{k-1}, x_k)) and, with one wait, the only level (1/n from x_1/10 to x_1) are drawn: the
    earlier version drew its steps from x_1 on, and a run with one waiting job (the deadlock
    scenario's gang policy: one job waits 1 h) drew a single point — an empty chart."""
    x = np.sort(w[w > 0])
    if not x.size:
        return np.zeros(0), np.zeros(0)
    n = w.size
    xs = np.concatenate(([x[0] / 10.0], x))
    ys = (x.size - np.arange(x.size + 1)) / n
    return xs, ys


def wait_survival(waits: Mapping[str, np.ndarray], title: str = "Queue wait: who waits how long") -> str:
    """Fraction of jobs that waited longer than x, log-log: the tail is where policies differ. A
    policy that started no job is named in the legend (a proxy line: an empty series on log axes
    makes matplotlib refuse the autoscale)."""
    fig, ax = plt.subplots(figsize=(9, 3.4))
    handles: list = []
    drawn = False
    for i, (name, w) in enumerate(waits.items()):
        color = COLORS[i % len(COLORS)]
        if not w.size:
            handles.append(Line2D([], [], color=color, ls=":", label=f"{name} (no job started)"))
            continue
        xs, ys = survival_steps(w)
        immediate = 100.0 * (w.size - (xs.size - 1 if xs.size else 0)) / w.size
        if xs.size:
            (line,) = ax.step(xs, ys, where="post", color=color, lw=1.4,
                              label=f"{name} ({immediate:.0f}% started at once)")
            ax.plot(xs[1:], ys[:-1], "o", color=color, ms=3)   # each wait, on its level
            handles.append(line)
            drawn = True
        else:
            handles.append(Line2D([], [], color=color, label=f"{name} (all started at once)"))
    if not drawn:
        ax.set_xlim(1, 1e6)
        ax.set_ylim(1e-3, 1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("wait before start (seconds, log scale)")
    ax.set_ylabel("fraction of jobs waiting longer")
    for s, label in ((60, "1 min"), (3600, "1 h"), (86400, "1 day")):
        ax.axvline(s, color="#8c959f", lw=0.6, ls=":")
        ax.text(s, 0.97, label, transform=ax.get_xaxis_transform(), fontsize=8, color="#57606a",
                rotation=90, va="top", ha="right")
    ax.set_title(title, loc="left", fontsize=11)
    ax.grid(alpha=0.3, which="major")
    if handles:
        ax.legend(handles=handles, frameon=False, fontsize=9, loc="lower left")
    if not drawn:
        ax.text(0.5, 0.5, "no job waited: every started job started at once", transform=ax.transAxes,
                ha="center", color="#57606a")
    return to_png_b64(fig)
