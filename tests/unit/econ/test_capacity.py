"""Capacity mix: the MILP against the break-even and newsvendor arithmetic."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.econ.capacity import Prices, cost_with_baseline, newsvendor_level, plan_capacity, solve_mix
from gpufleet.econ.demand import Demand, builtin

P = Prices(od=1.0, committed_ratio=0.6, block=0.71, block_hours=168, gpus_per_node=8, spot_effective=0.5)


def demand(values, eligible=None):
    g = np.asarray(values, float)
    return Demand("test", g, np.zeros_like(g) if eligible is None else np.asarray(eligible, float))


def test_a_gpu_busy_half_the_time_is_not_worth_committing_at_sixty_percent():
    """Demand 1 GPU in 50 of 100 hours, c = 0.6: committing costs 0.6 × 100 = 60, on demand
    costs 50. u = 0.5 < c = 0.6: commit nothing, pay 50."""
    m = solve_mix(demand([1] * 50 + [0] * 50), P, use_blocks=False, use_spot=False)
    assert m.committed == 0
    assert m.cost == pytest.approx(50.0)


def test_a_gpu_busy_seventy_percent_of_the_time_is_committed():
    """1 GPU in 70 of 100 hours: commit 0.6 × 100 = 60 < on demand 70 (u = 0.7 > c)."""
    m = solve_mix(demand([1] * 70 + [0] * 30), P, use_blocks=False, use_spot=False)
    assert m.committed == 1
    assert m.cost == pytest.approx(60.0)


def test_the_milp_commits_up_to_the_level_demand_exceeds_forty_percent_of_the_time():
    """Demand takes the values 1..100 once each. P(D > q) = (100 − q)/100 ≤ c = 0.6 first at
    q = 40: the 40th committed GPU is used 61 of 100 hours (pays: 61 > 60), the 41st only 59."""
    d = demand(np.arange(1, 101))
    m = solve_mix(d, P, use_blocks=False, use_spot=False)
    assert m.committed in (40, 41)  # P(D > 40) = 0.60 exactly: both cost the same
    assert newsvendor_level(d.gpus, 0.6) == 40
    expected = 0.6 * 100 * 40 + sum(k - 40 for k in range(41, 101))  # 2400 + 1830
    assert m.cost == pytest.approx(expected)


def test_the_p50_rule_is_optimal_only_when_commitments_cost_half_of_on_demand():
    """Values 1..100: the k-th committed GPU is used (101 − k) of 100 hours. At c = 0.5 the 50th
    (51 h) pays, the 51st (50 h) breaks even: q* = 50 or 51, the p50 (50.5). At c = 0.6: 40 < p50."""
    d = demand(np.arange(1, 101))
    half = Prices(1.0, 0.5, 0.71, 168, 8, 0.5)
    assert solve_mix(d, half, use_blocks=False, use_spot=False).committed in (50, 51)
    assert solve_mix(d, P, use_blocks=False, use_spot=False).committed < np.median(d.gpus)


def test_cost_at_the_newsvendor_level_matches_the_normal_demand_example():
    """Reference §1.4: D ~ Normal(100, 20), c = 0.6, in OD-hour units per hour: q* = 94.9 costs
    67.7; q = 80 costs 69.7; q = 120 costs 73.7; all on demand 100. 200,000 seeded hours."""
    rng = np.random.default_rng(1)
    d = demand(np.maximum(0, rng.normal(100, 20, 200_000)))
    q = newsvendor_level(d.gpus, 0.6)
    assert q == pytest.approx(94.9, abs=0.3)
    per_hour = cost_with_baseline(d, P, np.array([80.0, q, 120.0]), spot=False) / d.hours
    assert per_hour == pytest.approx([69.7, 67.7, 73.7], abs=0.15)


def test_a_busy_week_is_covered_by_a_capacity_block_when_its_price_is_below_on_demand():
    """Two weeks (336 h): 0 GPUs in week one, 8 GPUs all of week two. A block of one 8-GPU node
    for week two costs 0.71 × 8 × 168 = 954.2; on demand 8 × 168 = 1344; committing 8 GPUs for
    both weeks 0.6 × 8 × 336 = 1612.8. The block wins."""
    d = demand([0] * 168 + [8] * 168)
    m = solve_mix(d, P, use_blocks=True, use_spot=False)
    assert m.block_nodes == [0, 1]
    assert m.committed == 0
    assert m.cost == pytest.approx(954.24)


def test_spot_takes_only_the_eligible_part_of_the_overflow():
    """10 hours of 10 GPUs, 4 eligible. Commit 0.6 × 10 each = 6 per GPU; spot 0.5 per GPU-hour:
    for the 4 eligible GPUs spot (0.5 × 10 = 5) beats committing (6): 6 committed + 4 on spot;
    cost 6 × 6 + 4 × 10 × 0.5 = 56."""
    m = solve_mix(demand([10] * 10, [4] * 10), P, use_blocks=False, use_spot=True)
    assert m.committed == 6
    assert m.spot_gpu_hours == pytest.approx(40.0)
    assert m.cost == pytest.approx(56.0)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=5, max_size=60), st.floats(0.3, 0.95))
def test_the_milp_never_costs_more_than_the_best_fixed_baseline(values, c):
    """The MILP with on demand as overflow is the exact minimum over integer baselines."""
    d = demand(values)
    p = Prices(1.0, c, 0.9, 168, 8, 0.5)
    m = solve_mix(d, p, use_blocks=False, use_spot=False)
    grid = cost_with_baseline(d, p, np.arange(0, 51, dtype=float), spot=False)
    assert m.cost <= grid.min() + 1e-6
    assert m.cost == pytest.approx(grid.min(), abs=1e-6)


def test_the_built_in_plan_is_cheaper_than_all_on_demand_and_solves_optimally():
    plan = plan_capacity(builtin(), Prices(6.88, 0.6, 4.916, 168, 8, 0.5))
    assert plan.mix.cost < plan.all_od_cost
    assert "Optimal" in plan.mix.status
    assert plan.od_only.committed == pytest.approx(plan.newsvendor_level, abs=1.0)


def _gang_demand(nodes: int, hours: int):
    from gpufleet.econ.demand import from_jobs
    from gpufleet.testing.builders import job

    j = job("g").gpus(8).gang(nodes).runs(hours * 3600.0).build()
    return from_jobs("one gang", [j], [("g", 0.0, hours * 3600.0)], gpus_per_node=8, max_spot_nodes=11)


def test_a_seven_node_gang_pays_its_own_spot_price_and_is_committed_where_spot_no_longer_pays():
    """One 7-node gang (56 GPUs) for 100 h, notice 2 min covering the 1-min write, R = 10 min,
    node MTBI 4 h: p_eff(7) = 0.43/(1 − 7 × 12/240) = 0.43/0.65 = 0.6615 > c = 0.6, so committing
    its 56 GPUs (0.6 × 56 × 100 = 3,360 at P = 1) beats spot (0.6615 × 5,600 = 3,704.6). Priced at
    the one-node p_eff (0.4526) the plan put it all on spot and claimed 2,534.7, a cost no plan
    reaches: the gang really pays 0.6615 per GPU-hour there."""
    from gpufleet.econ.spot import spot_economics

    d = _gang_demand(7, 100)
    assert list(d.by_nodes()) == [7]
    p7 = spot_economics(0.43, 1.0, 10.0, 240.0, 7, notice_min=2.0).effective_price
    one = spot_economics(0.43, 1.0, 10.0, 240.0, 1, notice_min=2.0).effective_price
    assert p7 == pytest.approx(0.43 / 0.65)
    p = Prices(1.0, 0.6, 0.9, 168, 8, one, spot_by_nodes=((1, one), (7, p7)))
    m = solve_mix(d, p, use_blocks=False, use_spot=True)
    assert m.committed == 56 and m.spot_gpu_hours == pytest.approx(0.0)
    assert m.cost == pytest.approx(3360.0)
    naive = solve_mix(d, Prices(1.0, 0.6, 0.9, 168, 8, one), use_blocks=False, use_spot=True)
    assert naive.committed == 0 and naive.cost == pytest.approx(one * 5600)


def test_a_small_gang_stays_on_spot_at_its_own_price():
    """A 2-node gang: p_eff(2) = 0.43/(1 − 0.1) = 0.4778 < 0.6, so all 16 × 100 GPU-hours go on spot
    at 0.4778: 764.4, and the cost splits by gang size."""
    from gpufleet.econ.spot import spot_economics

    p2 = spot_economics(0.43, 1.0, 10.0, 240.0, 2, notice_min=2.0).effective_price
    p = Prices(1.0, 0.6, 0.9, 168, 8, 0.4526, spot_by_nodes=((2, p2),))
    m = solve_mix(_gang_demand(2, 100), p, use_blocks=False, use_spot=True)
    assert m.committed == 0 and m.spot_by_nodes == {2: pytest.approx(1600.0)}
    assert m.spot_cost == pytest.approx(p2 * 1600) == pytest.approx(764.44, abs=0.01)


def test_the_terminal_and_the_html_print_the_same_cost_for_every_rule(tmp_path):
    """The "MILP, all tiers" row is the MILP's own cost in both (it printed the cost of its level
    with on-demand overflow in the terminal and the MILP's cost in the HTML): both read rule_rows."""
    from typer.testing import CliRunner

    from gpufleet.cli.main import app
    from gpufleet.econ.capacity import rule_rows

    res = CliRunner().invoke(app, ["plan", "capacity", "--out", str(tmp_path)], terminal_width=200)
    assert res.exit_code == 0, res.output
    import json

    data = json.loads((tmp_path / "capacity.json").read_text())
    html = (tmp_path / "capacity.html").read_text()
    milp = next(r for r in data["rules"] if r["rule"] == "MILP, all tiers")
    assert milp["cost"] == pytest.approx(data["solution"]["cost"])
    for r in data["rules"]:
        shown = f"{r['cost']:,.0f}"
        assert shown in res.output and shown in html
    labels = [r.label for r in rule_rows(plan_capacity(builtin(), Prices(6.88, 0.6, 4.916, 168, 8, 0.45)))]
    assert labels == [r["rule"] for r in data["rules"]]
