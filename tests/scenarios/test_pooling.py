"""The pooling arithmetic on the bundled `tenancy` scenario (slow: four week-long simulations)."""

import pytest

from gpufleet.policies.registry import profile
from gpufleet.sim.metrics import summarize
from gpufleet.sim.runner import simulate
from gpufleet.sim.scenario import bundled
from gpufleet.sim.usage import UsageTracker


@pytest.fixture(scope="module")
def summaries():
    scn = bundled("tenancy")
    ten, jobs = scn.tenancy, scn.jobs()
    return {p: summarize(simulate(scn.fleet, jobs, profile(p), horizon=scn.horizon, tenancy=ten,
                                  usage_tracker=UsageTracker(ten.half_life_s)), ten)
            for p in ("static-partitions", "free-for-all", "tenancy", "tenancy-naive-victims")}


@pytest.mark.slow
def test_pooling_beats_static_partitions_on_utilisation(summaries):
    pooled, static = (summaries[p]["gpu_allocation_pct"] for p in ("tenancy", "static-partitions"))
    assert pooled > static + 3


@pytest.mark.slow
def test_the_smallest_tenant_waits_least_under_the_four_layer_policy(summaries):
    p95 = {p: s["tenants"]["interns"]["wait_p95_s"] for p, s in summaries.items()}
    assert p95["tenancy"] < p95["free-for-all"] and p95["tenancy"] < p95["static-partitions"]


@pytest.mark.slow
def test_checkpoint_aware_victims_lose_less_work_than_the_naive_rule(summaries):
    assert summaries["tenancy"]["preemptions"] > 0
    assert summaries["tenancy"]["lost_gpu_hours"] < summaries["tenancy-naive-victims"]["lost_gpu_hours"]


@pytest.mark.slow
def test_per_tenant_metrics_cover_every_tenant_and_add_up(summaries):
    s = summaries["tenancy"]
    assert set(s["tenants"]) == {"research", "product", "vision", "interns"}
    assert sum(t["entitlement_pct"] for t in s["tenants"].values()) == pytest.approx(100.0)
    shares = sum(t["share_of_fleet_pct"] for t in s["tenants"].values())
    assert shares == pytest.approx(s["gpu_allocation_pct"], rel=0.02)
