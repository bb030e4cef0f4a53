"""Issue 29 §5: the deadlock report's wait chart has its curve, the sweep report picks "best" by
each metric's stated direction with the right time unit and says when an interval is wider than
its mean, and tables fit 80 columns when piped."""

import base64
import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from gpufleet.report import plots
from gpufleet.sweep.report import direction, overview_plot, setting_section, time_unit


def test_one_waiting_job_of_two_draws_a_level_from_a_decade_before_its_wait():
    """The deadlock scenario under gang-bestfit: train-a starts at once, train-b waits 3,600 s.
    Fraction waiting longer than x: 1/2 for x < 3,600 s, 0 after. The curve starts at 360 s
    (a decade left) at 0.5 and drops at 3,600 s — before, it was the single point (3600, 0.5),
    which draws nothing."""
    xs, ys = plots.survival_steps(np.array([0.0, 3600.0]))
    assert xs.tolist() == [360.0, 3600.0] and ys.tolist() == [0.5, 0.0]


def test_three_waits_of_four_step_down_by_a_quarter():
    xs, ys = plots.survival_steps(np.array([0.0, 10.0, 20.0, 40.0]))
    assert xs.tolist() == [1.0, 10.0, 20.0, 40.0] and ys.tolist() == [0.75, 0.5, 0.25, 0.0]


def _colour_pixels(b64: str, hex_colour: str) -> int:
    img = plots.plt.imread(io.BytesIO(base64.b64decode(b64)))[..., :3]
    rgb = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255
    return int((np.abs(img - rgb).max(axis=2) < 0.08).sum())


def test_the_deadlock_wait_chart_draws_the_gang_policys_wait_and_names_the_policy_that_started_none():
    """Series colour COLORS[0] for gang-bestfit: its curve (360 s → 3,600 s at 0.5, a third of
    the log axis) is hundreds of pixels, far more than the legend's sample line alone."""
    png = plots.wait_survival({"gang-bestfit": np.array([0.0, 3600.0]), "per-pod": np.array([])})
    legend_only = plots.wait_survival({"gang-bestfit": np.array([0.0, 0.0])})
    assert _colour_pixels(png, plots.COLORS[0]) > 3 * max(1, _colour_pixels(legend_only, plots.COLORS[0]))


@pytest.mark.parametrize("metric, expected", [
    ("gpu_allocation_pct", None), ("gpu_busy_pct", "higher"), ("wait_p95_s", "lower"),
    ("wait_p50_s[9-64]", "lower"), ("jobs_finished", "higher"), ("stranded_gpus_avg", "lower"),
    ("big_gang_never_started", "lower"), ("jobs_submitted", None),
])
def test_each_metric_has_a_stated_direction_and_allocation_has_none(metric, expected):
    assert direction(metric) == expected


def _rows(metric, values):
    return {p: [{"seed": s, metric: v} for s, v in enumerate(vs, 1)] for p, vs in values.items()}


def test_the_higher_allocation_is_not_bolded_as_best():
    """per-pod holds 100 % of the GPUs in deadlock, gang-bestfit 60 %: holding is not working,
    so allocation has no best; a wait has one (the lower)."""
    rows = _rows("gpu_allocation_pct", {"gang-bestfit": [60, 61], "per-pod": [100, 100]})
    html = setting_section("s", rows, ["gpu_allocation_pct"]).html
    assert "<b>" not in html and "no better direction: held GPUs count idle ones" in html
    html = setting_section("s", _rows("wait_p50_s", {"a": [60, 61], "b": [100, 100]}), ["wait_p50_s"]).html
    assert re.search(r"<b>1\.0 min ± [^<]*</b>", html) and "lower is better" in html


def test_an_interval_wider_than_its_mean_is_marked_and_explained():
    """Seeds 1 s and 99 s: mean 50 s, t(0.975, 1) = 12.706 × s/√2 = 12.706 × 49 = 622.6 s, wider
    than the mean: marked † with the note."""
    html = setting_section("s", _rows("wait_p50_s", {"a": [1, 99], "b": [50, 50]}), ["wait_p50_s"]).html
    assert "†" in html and "wider than the mean" in html


@pytest.mark.parametrize("seconds, unit", [([30, 90], "seconds"), ([300, 2400], "minutes"),
                                           ([4000, 36000], "hours"), ([3e5], "days")])
def test_the_chart_unit_follows_the_size_of_the_waits(seconds, unit):
    assert time_unit(seconds)[1] == unit


def test_the_overview_chart_labels_minutes_for_waits_of_minutes(monkeypatch):
    """Waits of 5 and 40 minutes: the axis reads minutes (before: "wait_p50_s (hours)", the
    seconds-named metric on an hours axis, bars of 0.08 and 0.67)."""
    labels = []
    orig = plots.plt.Axes.set_ylabel
    monkeypatch.setattr(plots.plt.Axes, "set_ylabel", lambda ax, text, *a, **k: labels.append(text)
                        or orig(ax, text, *a, **k))
    overview_plot({"s": _rows("wait_p50_s", {"a": [300, 300], "b": [2400, 2400]})}, "wait_p50_s")
    assert labels == ["wait_p50 (minutes)"]


def test_a_piped_table_fits_80_columns_and_cuts_nothing(tmp_path):
    """``simulate deadlock`` piped with COLUMNS=80: every line at most 80 characters and no cell
    ends in "…" (folded, not cut); before, the pipe got a 200-column console (86-column lines)."""
    env = dict(os.environ, COLUMNS="80")
    cmd = [sys.executable, "-c", "from gpufleet.cli.main import app; app()", "simulate", "deadlock",
           "--out", str(tmp_path / "o"), "--no-progress"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in out.stdout and "of which can never run on this" in out.stdout
