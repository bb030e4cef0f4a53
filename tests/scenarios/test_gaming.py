"""Gaming a fair-share fleet: one tenant games, the others don't.

Each case runs the gamer honest and gaming, under a naive policy and under ours; the gain is how
much better gaming left the gamer under the same policy (report/tenancy_gaming.py).
"""

import pytest

from gpufleet.report.tenancy_gaming import CASES, run_case

BY_NAME = {c.name: c for c in CASES}


@pytest.fixture(scope="module")
def results():
    return {c.name: run_case(c) for c in CASES}


@pytest.mark.parametrize("name", [c.name for c in CASES], ids=[
    "inflating requests pays off under a free-for-all",
    "splitting a job pays off under smallest-job-first",
    "idle placeholders pay off under a free-for-all",
    "under-stated run times pay off under EASY backfill",
    "marking everything high priority pays off under cross-tenant priority"])
def test_the_trick_pays_under_the_naive_policy(results, name):
    assert results[name].gain("naive") > 0


@pytest.mark.parametrize("name", ["split", "understate", "all-high"], ids=[
    "dominant share charges GPUs so splitting buys nothing",
    "backfill plans with the tenant's estimate record so under-stating buys nothing",
    "priority counts only within a tenant and its budget so all-high buys nothing"])
def test_our_policy_removes_the_gain(results, name):
    assert results[name].gain("ours") <= 1e-6


@pytest.mark.parametrize("name", ["inflate", "placeholders"], ids=[
    "an inflating tenant keeps at most its guarantee and is flagged for idle allocation",
    "a tenant parking placeholders keeps at most its guarantee and is flagged for idle allocation"])
def test_holding_tricks_are_capped_at_the_guarantee_and_flagged(results, name):
    r = results[name]
    assert r.outcome[("ours", True)] <= 100 / 3 + 1.0  # A's nominal is 16 of 48 GPUs
    assert r.gain("ours") < r.gain("naive") / 3
    assert any(f.startswith("idle-allocation") for f in r.flags["A"])


@pytest.mark.parametrize(("name", "flag"), [("understate", "runtime-underestimate"),
                                            ("all-high", "priority-over-budget")],
                         ids=["a tenant under-stating run times is flagged for its estimate accuracy",
                              "marking everything high is flagged for exceeding the priority budget"])
def test_the_gamer_and_only_the_gamer_is_flagged(results, name, flag):
    flags = results[name].flags
    assert set(flags) == {"A"} and any(f.startswith(flag) for f in flags["A"])
