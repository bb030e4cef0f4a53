"""Reliability formulas, each worked by hand (figures from docs/reliability.md and the reference)."""

from __future__ import annotations

import math

import pytest

from gpufleet.studies.reliability import (
    daly_goodput,
    daly_interval_s,
    erlang_b,
    job_mtti_s,
    no_spare_probability,
    poisson_cdf,
    spares_needed,
    spot_break_even_discount,
    spot_waste_per_reclaim_s,
    young_interval_s,
)

DAY = 86400.0


def test_young_and_daly_intervals_for_a_llama3_scale_job():
    """M = 3.09 h = 11,135 s, δ = 60 s: Young √(2·60·11135) = 1,156 s; Daly: δ/(2M) = 0.002694,
    bracket 1 + ⅓·0.0519 + 0.0003 = 1.0176, 1,156 × 1.0176 − 60 = 1,116 s."""
    assert young_interval_s(60, 11_135) == pytest.approx(1156, abs=1)
    assert daly_interval_s(60, 11_135) == pytest.approx(1116, abs=2)


def test_daly_goodput_matches_the_worked_example():
    """τ = 1,116, δ = 60, R = 600, M = 11,135: T_w/T_s = 11135·e^(600/11135)·(e^(1176/11135) − 1)/1116
    = 11135 × 1.05537 × 0.11140 / 1116 = 1.173, goodput 0.853."""
    assert daly_goodput(1116, 60, 600, 11_135) == pytest.approx(0.853, abs=0.001)


def test_daly_interval_is_the_mtti_when_a_checkpoint_costs_more_than_twice_it():
    assert daly_interval_s(3000, 1000) == 1000


def test_a_gang_of_n_nodes_is_interrupted_n_times_as_often():
    """Llama 3: 419 / 110,592 node-days = 3.789e-3 per node-day; 2,048 nodes → 1/(2048 × 3.789e-3)
    = 0.1289 d = 3.09 h (the paper's 16k-GPU job: 1,296 h / 419 = 3.09 h)."""
    r = 419 / 110_592 / DAY
    assert job_mtti_s(2048, r) / 3600 == pytest.approx(3.09, abs=0.01)
    assert job_mtti_s(1, r) == pytest.approx(2048 * job_mtti_s(2048, r))


def test_poisson_cdf_small_and_large_lambda():
    """P(X ≤ 1 | λ=2) = e^-2 (1 + 2) = 0.40601; λ = 1000: the median is ≈ λ, P(X ≤ 1000) ≈ 0.508."""
    assert poisson_cdf(1, 2.0) == pytest.approx(3 * math.exp(-2))
    assert poisson_cdf(1000, 1000.0) == pytest.approx(0.5084, abs=0.001)


def test_spares_for_1024_nodes_at_the_llama3_rate_over_a_three_day_repair():
    """λ = 1024 × 3.789e-3 × 3 = 11.64 nodes away on average. P(N ≥ s) < 1% first at s = 21
    (P(N ≤ 20) = 0.9905; P(N ≤ 19) = 0.9830). The reference's P99 of 20 is P(N > s), one less:
    a failure needs a spare while s are already away."""
    r = 419 / 110_592 / DAY
    s = spares_needed(1024 * r, 3 * DAY)
    assert s == 21
    assert no_spare_probability(s, 1024 * r, 3 * DAY) < 0.01 <= no_spare_probability(s - 1, 1024 * r, 3 * DAY)


def test_erlang_b_matches_the_reference_table():
    """E = 11.6: 15 spares block 7.6%, 20 block 0.76% (reliability-reference §3.3)."""
    assert erlang_b(11.6, 15) == pytest.approx(0.076, abs=0.002)
    assert erlang_b(11.6, 20) == pytest.approx(0.0076, abs=0.0003)


def test_spot_waste_and_break_even_discount():
    """τ = 1 h, R = 10 min: waste per reclaim 1800 + 600 = 2,400 s. With δ = 60 s and one reclaim per
    node per 20 h: useful = 3600/3660 − 2400/72000 = 0.98361 − 0.03333 = 0.95027; against an
    on-demand node that also checkpoints (useful 0.98361): d* = 1 − 0.95027/0.98361 = 3.39%."""
    assert spot_waste_per_reclaim_s(3600, 600) == 2400
    d = spot_break_even_discount(3600, 60, 600, 1 / 72_000, on_demand_useful=3600 / 3660)
    assert d == pytest.approx(0.0339, abs=0.0002)


def test_counting_the_idle_spares_own_failures_adds_a_spare_at_the_tail():
    """1,024 nodes, 3-day repair: alone, 21 spares (λ = 11.64). With Λ = (1024 + s) r: s = 21 gives
    λ = 1045 × 3.789e-3 × 3 = 11.878 and P(N ≥ 21) = 1.046% ≥ 1%; s = 22 gives 0.548%: 22."""
    from gpufleet.studies.reliability import spares_for_pool

    r = 419 / 110_592 / DAY
    assert spares_for_pool(1024, r, 3 * DAY) == 22


def test_a_run_that_starts_with_every_node_up_averages_above_the_steady_availability():
    """r = 1/day, E[T] = 1 day: A = 1/2; k = 2 per day. Over W = 1 day: Ā = ½ + ½(1 − e^{−2})/2 =
    0.7162; over 1,000 days ≈ A; over an instant, 1."""
    from gpufleet.studies.reliability import mean_availability, node_availability

    day = 86400.0
    assert node_availability(1 / day, day) == 0.5
    assert mean_availability(1 / day, day, day) == pytest.approx(0.5 + 0.5 * (1 - math.exp(-2)) / 2)
    assert mean_availability(1 / day, day, 1000 * day) == pytest.approx(0.5, abs=3e-4)
    assert mean_availability(1 / day, day, 1e-6) == pytest.approx(1.0)


def test_the_finite_source_spare_tail_of_one_node_and_one_spare_is_two_p_over_one_plus_p():
    """N = 1, s = 1, M = 2, p = r E[T]/(1 + r E[T]). Away d ~ Binomial(2, p); in service
    min(1, 2 − d): 1, 1, 0. Failures that find the pool empty come from d = 1 (weight 2 − 1 = 1):
    P = 2p(1 − p) / [(1 − p)² + 2p(1 − p)] = 2p / (1 + p). r E[T] = 1: p = ½, P = ⅔; r E[T] = 0.1:
    p = 1/11, P = (2/11)/(12/11) = 1/6."""
    from gpufleet.studies.reliability import no_spare_probability_finite

    assert no_spare_probability_finite(1, 1, 1.0, 1.0) == pytest.approx(2 / 3)
    assert no_spare_probability_finite(1, 1, 0.1, 1.0) == pytest.approx(1 / 6)
    assert no_spare_probability_finite(5, 0, 0.1, 1.0) == 1.0


@pytest.mark.parametrize(("delta", "mtti", "daly"),
                         [(5.0, 1440.0, 116.69), (5.0, 15.0, 9.14), (60.0, 17820.0, 1422.6)],
                         ids=["paper, M = 24 h", "paper, M = 15 min", "cadence study, M = 4.95 h"])
def test_daly_exact_optimum_solves_its_first_order_condition_and_matches_the_higher_order_estimate(
        delta, mtti, daly):
    """Minimising (e^{(τ+δ)/M} − 1)/τ gives e^{(τ+δ)/M}(1 − τ/M) = 1, root τ = M[1 + W₀(−e^{−1−δ/M})].
    Daly's higher-order estimate is its series: 116.69 vs 116.69 (M = 24 h), 9.14 vs 9.17 (15 min,
    where δ/M = 1/3 is no longer small), 1,422.6 vs 1,422.6 s; Young's √(2δM) says 120, 12.2, 1,462."""
    from gpufleet.studies.reliability import daly_exact_interval_s, daly_interval_s

    tau = daly_exact_interval_s(delta, mtti)
    assert math.exp((tau + delta) / mtti) * (1 - tau / mtti) == pytest.approx(1.0, abs=1e-12)
    assert daly_interval_s(delta, mtti) == pytest.approx(daly, abs=0.01)
    assert tau == pytest.approx(daly, rel=0.003)


def test_the_exact_spot_share_of_a_64_node_gang_is_nothing_at_one_hour_and_a_third_at_ten_minutes():
    """λ = 64/day (1/λ = 1,350 s), δ = R = 300 s. τ = 1 h: τ' = 3,900, λτ' = 2.889,
    W = 1,350 − 3,900 × e^{−2.889}/(1 − e^{−2.889}) + 300 = 1,350 − 229.5 + 300 = 1,420.5 s, λW = 1.052 > 1:
    no useful work (first order said the same with τ/2 + R = 2,250 s). τ = 600 s: τ' = 900, λτ' = 2/3,
    W = 1,350 − 900 × 0.5134/0.4866 + 300 = 700.4 s, share = ⅔ × (1 − 0.5188) = 0.3208. The best τ
    is near 10 min with a share a little above that."""
    from gpufleet.studies.reliability import best_spot_interval, spot_useful_share_exact

    lam = 64 / DAY
    assert spot_useful_share_exact(3600.0, 300.0, 300.0, lam) == 0.0
    assert spot_useful_share_exact(600.0, 300.0, 300.0, lam) == pytest.approx(0.3208, abs=2e-4)
    tau, share = best_spot_interval(300.0, 300.0, lam)
    assert 500 < tau < 700 and share >= 0.3208
