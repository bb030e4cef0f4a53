"""Cold-start chain and warm-pool arithmetic (econ-reference.md §3), with the simulated check."""

import pytest

from gpufleet.econ.coldstart import plan_coldstart, variants
from gpufleet.econ.inputs import load_inputs
from gpufleet.econ.queueing import (
    burst_spare,
    erlang_b,
    erlang_c,
    pool_for_loss,
    pool_for_wait,
    simulate_loss,
)

C = load_inputs().coldstart.figures


@pytest.mark.parametrize(("n", "p_cold", "p_wait"), [
    (70, 0.0237, 0.1455), (75, 0.0083, 0.0403), (80, 0.0022, 0.0087), (85, 0.0004, 0.0015)],
    ids=["70 warm", "75 warm", "80 warm", "85 warm"])
def test_erlang_b_and_c_match_the_reference_table_at_sixty_erlangs(n, p_cold, p_wait):
    """λ = 2/s, S = 30 s: A = 60. Reference §3.4 table: B(75, 60) = 0.83%, C(80, 60) = 0.87%."""
    assert erlang_b(n, 60.0) == pytest.approx(p_cold, abs=0.00006)
    assert erlang_c(n, 60.0) == pytest.approx(p_wait, abs=0.0006)


def test_erlang_b_of_one_server_is_a_over_one_plus_a():
    """B(1, A) = A / (1 + A): with A = 1, half the requests find the one instance busy."""
    assert erlang_b(1, 1.0) == pytest.approx(0.5)


def test_pool_sizes_for_one_percent_are_75_for_loss_and_80_for_wait():
    """B(74, 60) = 1.05% ≥ 1% > B(75, 60) = 0.83%; C(79) ≥ 1% > C(80) = 0.87%."""
    assert pool_for_loss(60.0, 0.01) == 75
    assert pool_for_wait(60.0, 0.01) == 80


@pytest.mark.parametrize(("window", "p99"), [(30, 79), (60, 146), (120, 277)],
                         ids=["30 s cold start", "60 s", "120 s"])
def test_burst_spare_is_the_p99_of_poisson_arrivals_during_a_cold_start(window, p99):
    """λ = 2/s: mean 60, 120, 240 arrivals; p99 = 79, 146, 277 (reference §3.4)."""
    assert burst_spare(2.0, window) == p99


@pytest.mark.parametrize("service", ["exponential", "fixed"])
def test_simulated_cold_probability_is_within_five_percent_of_erlang_b(service):
    """N = 60 instances at A = 60 erlangs: B = 9.63%. A seeded loss-system simulation (300,000
    Poisson arrivals) agrees within 5%, with exponential or fixed holding times (B is
    insensitive to the holding-time distribution)."""
    sim = simulate_loss(60, 2.0, 30.0, 300_000, seed=3, service=service)
    assert sim == pytest.approx(erlang_b(60, 60.0), rel=0.05)


def test_warm_pool_sized_by_simulation_is_within_five_percent_of_the_erlang_size():
    """Erlang B gives 75 for P(cold) < 1% at A = 60; the smallest simulated size meeting the
    target must lie within 5% of 75 (71..78), and simulated P(cold) at 75 within 15% of 0.83%
    (a 0.8% event in 300,000 arrivals has ~5% sampling noise, correlated)."""
    wp = plan_coldstart(C)["warm_pool"]
    assert wp["size_loss"] == 75
    assert abs(wp["simulated_size"] - 75) <= 0.05 * 75
    assert wp["simulated_p_cold"] == pytest.approx(wp["p_cold"], rel=0.15)
    assert wp["cost_per_hr"] == pytest.approx(75 * 6.88)


def test_the_cold_chain_adds_up_link_by_link():
    """Image 12 GB ÷ 0.058 GB/s = 206.9 s; runc 0.033 s; weights 7e9 × 2 B = 14 GB ÷ 0.5 GB/s =
    28 s; engine 34 s; first token 3.72 s: total 272.65 s."""
    cold = variants(C)[0]
    assert [round(lk.seconds, 2) for lk in cold.links] == [206.9, 0.03, 28.0, 34.0, 3.72]
    assert cold.total_s == pytest.approx(272.65, abs=0.01)


def test_a_snapshot_replaces_weight_load_engine_init_and_cold_first_token():
    """Snapshot: lazy pull 206.9 × 0.1 = 20.69 s + 0.033 + 20 GB ÷ 5 GB/s = 4 s + 0.92 s = 25.64 s."""
    snap = next(v for v in variants(C) if "snapshot" in v.name)
    assert snap.total_s == pytest.approx(25.64, abs=0.01)
    assert "weight load" not in [lk.name for lk in snap.links]


def test_a_local_weight_cache_saves_the_difference_in_load_time():
    """14 GB at 0.5 GB/s = 28 s vs at 5 GB/s = 2.8 s: saves 25.2 s."""
    vs = {v.name: v.total_s for v in variants(C)}
    assert vs["cold (every link)"] - vs["local weight cache"] == pytest.approx(25.2)
