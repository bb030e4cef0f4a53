"""The report's reliability studies: every simulated figure is a mean over seeds with a 95%
interval, and a formula agrees only when it lies inside (studies/reliability_study.py)."""

from __future__ import annotations

import pytest

from gpufleet.sim.fleet_events.failures import FailureConfig
from gpufleet.studies.reliability_study import cadence_curve, elastic_vs_rigid, spot_cadences


def test_the_cadence_curve_agrees_with_daly_exact_at_every_interval_and_the_first_order_one_does_not():
    """A 64-node gang at 20× the Llama 3 rate: M = 1/(64 × 20 × 3.789e-3/day) = 4.95 h = 17,820 s,
    δ = 60 s, R = 180 s, τ* = 1,422 s. Ten seeds per point (the same at every τ): Daly's exact
    goodput τ / (M e^{R/M}(e^{(τ+δ)/M} − 1)) lies inside every interval (measured at ¼τ*:
    0.8366 ± 0.0014 against 0.8372; at 4τ*: 0.829 ± 0.012 against 0.830), while the first-order
    1 − δ/τ − (τ+δ)/2M − R/M = 1 − 0.1687 − 0.0116 − 0.0101 = 0.8095 at ¼τ* lies far below the
    interval: the check tells the exact expression from the approximation. With 3 seeds the 4τ*
    point read 1.3% below Daly, inside its ±6% interval."""
    _, daly, runs = cadence_curve(FailureConfig(scale=20.0))
    assert daly == pytest.approx(1422.6, abs=0.5)
    assert all(r.goodput_ci.n == 10 and r.verdict == "agrees" for r in runs)
    quarter = runs[0]
    assert quarter.goodput_first_order == pytest.approx(0.8095, abs=2e-4)
    assert not quarter.goodput_ci.contains(quarter.goodput_first_order)
    assert max(runs, key=lambda r: r.goodput_sim).tau_s == pytest.approx(daly)


def test_elastic_goodput_comes_with_an_interval_that_holds_its_formula():
    """32 nodes at 20× the Llama 3 rate, 10 days of work, 8 seeds. The elastic gang's availability
    formula (reliability.elastic_goodput) gives 0.794; the simulated mean is 0.847 with a 95%
    interval of about ±0.06 (per-seed values 0.73 to 0.94: ~22 failures per run with 3.77-day
    repairs), so it agrees — and the interval says that a 7% gap is all these seeds can resolve.
    The rigid gang with no spare stalls at its first failure until a repair: 2.4% goodput."""
    rows = {e.label: e for e in elastic_vs_rigid()}
    el = rows["elastic, no spare"]
    assert el.goodput_ci.n == 8
    assert el.goodput_formula == pytest.approx(0.794, abs=0.001)
    assert el.verdict == "agrees" and el.goodput_ci.half_width < 0.1
    assert rows["rigid, no spare"].goodput_sim < 0.03
    assert el.goodput_ci.low > rows["rigid, no spare"].goodput_ci.high


def test_the_spot_break_even_at_four_hours_agrees_with_the_exact_value_over_seeds():
    """τ = 4 h, δ = R = 300 s, one reclaim per node-day: d* = λW = 7,441.7/86,400 = 8.613%. One seed
    read 3% (then 6.7%) below it; the interval over 4 seeds of 100 jobs × 15 days holds it
    (ten seeds: d*_sim/d*_exact = 0.987 ± 0.026, waste 0.990 ± 0.015)."""
    (row,) = spot_cadences(taus=(14_400.0,), jobs=100, seeds=range(2, 6))
    assert row.discount_exact == pytest.approx(0.086131, abs=2e-6)
    assert row.discount_ci.n == 4 and row.verdict == "agrees"
    assert row.waste_ci.contains(row.waste_exact_s)
