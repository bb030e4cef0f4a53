"""Admission by quota: guarantee, borrowing, lending limits, and the reason a job waits."""

import pytest

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.quota import QuotaLedger
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job

F = "H100-80GB"


def tenancy(a=FlavorQuota(16), b=FlavorQuota(16), cohort="c"):
    return Tenancy(tenants=(TenantQueue("a", cohort, ((F, a),)), TenantQueue("b", cohort, ((F, b),))),
                   cohorts=(Cohort("c"),) if cohort else ())


def cycle(ten, pending, running=(), nodes=4, policy="tenancy"):
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=nodes).build())
    for rj in running:
        for b in rj.bindings:
            table.take(b.node, b.request)
    return run_cycle(CycleInput(0.0, table, [PendingJob(j) for j in pending], profile(policy),
                                running=list(running), tenancy=ten))


def running(job_, node, start=0.0):
    from gpufleet.engine.plan import PodBinding
    from gpufleet.policies.quota import with_flavor
    j = with_flavor(job_, F)
    ps = j.pod_sets[0]
    return RunningJob(job_, start, tuple(PodBinding(j.id, ps.name, i, node + i, ps.request)
                                         for i in range(ps.replicas)))


@pytest.mark.parametrize(("quota_a", "cohort", "gpus", "reason"), [
    (FlavorQuota(16, borrowing_limit=8), "c", 32, "ExceedsBorrowingLimit"),
    (FlavorQuota(16), None, 24, "ExceedsNominalQuota"),
], ids=["a job beyond nominal plus borrowing limit is refused for the borrowing limit",
        "a tenant without a cohort cannot go past its nominal quota"])
def test_refused_jobs_carry_the_reason(quota_a, cohort, gpus, reason):
    ten = tenancy(a=quota_a, cohort=cohort)
    r = cycle(ten, [job("big").tenant("a").gpus(8).gang(gpus // 8).build()])
    st = r.statuses["big"]
    assert st.code is StatusCode.NOT_ADMITTED and st.reasons[0] == reason
    assert r.started == ()


def test_a_borrower_waits_for_cohort_capacity_when_the_lender_uses_its_quota():
    ten = tenancy()
    busy = running(job("b-run").tenant("b").gpus(8).gang(2).build(), node=0)
    r = cycle(ten, [job("a1").tenant("a").gpus(8).gang(2).build(),
                    job("a2").tenant("a").gpus(8).build()], running=[busy])
    assert r.started == ("a1",)
    assert r.statuses["a2"].reasons[0] == "WaitingForCohortCapacity"


def test_unused_quota_of_a_cohort_member_is_lent_to_a_busy_one():
    r = cycle(tenancy(), [job(f"a{i}").tenant("a").gpus(8).build() for i in range(4)])
    assert sorted(r.started) == ["a0", "a1", "a2", "a3"]


def test_the_lending_limit_keeps_part_of_the_lenders_quota_unborrowable():
    ten = tenancy(b=FlavorQuota(16, lending_limit=8))
    r = cycle(ten, [job(f"a{i}").tenant("a").gpus(8).build() for i in range(4)])
    assert sorted(r.started) == ["a0", "a1", "a2"]
    assert r.statuses["a3"].reasons[0] == "WaitingForCohortCapacity"


def test_static_partitions_never_borrow():
    r = cycle(tenancy(), [job(f"a{i}").tenant("a").gpus(8).build() for i in range(4)],
              policy="static-partitions")
    assert sorted(r.started) == ["a0", "a1"]
    assert r.statuses["a2"].reasons[0] == "ExceedsNominalQuota"


def test_hierarchical_cohorts_lend_across_teams_only_what_the_team_may_lend():
    """org > {team1: a, team2: b}. team2 lends at most 8 GPUs of b's 16 to the rest of the org,
    so a (16 nominal) can reach 16 + 8 = 24, not 32."""
    ten = Tenancy(
        tenants=(TenantQueue("a", "team1", ((F, FlavorQuota(16)),)),
                 TenantQueue("b", "team2", ((F, FlavorQuota(16)),))),
        cohorts=(Cohort("org"), Cohort("team1", "org"),
                 Cohort("team2", "org", ((F, FlavorQuota(0, None, 8)),))))
    led = QuotaLedger(ten)
    assert led.available(("t", "a"), F) == 24
    led.add("a", F, 24)
    assert led.available(("t", "a"), F) == 0
    assert led.available(("t", "b"), F) == 8


def test_shortfalls_name_what_a_demand_lacks_counting_what_the_cohort_may_lend():
    """a (nominal 16, borrowing limit 4) and b (nominal 16, 14 used) share cohort c: a may take
    its 16 plus min(4, 16 − 14) = 2 borrowed = 18 GPUs, so 18 fits (by borrowing) and 20 is
    20 − 18 = 2 short. Without a cohort, b (16, 14 used) can take 16 − 14 = 2: 3 is 1 short;
    with 20 used of 16 (a quota lowered since) it can take −4, so 1 GPU is 1 + 4 = 5 short."""
    from gpufleet.engine.status import Shortfall
    from gpufleet.model.tenancy import GPU_RESOURCE
    led = QuotaLedger(tenancy(a=FlavorQuota(16, borrowing_limit=4)))
    led.add("b", F, 14)
    assert led.shortfalls("a", F, {GPU_RESOURCE: 18}) == ()
    assert led.shortfalls("a", F, {GPU_RESOURCE: 20}) == (Shortfall(GPU_RESOURCE, F, 20, 18),)
    alone = QuotaLedger(tenancy(cohort=None))
    alone.add("b", F, 14)
    (s,) = alone.shortfalls("b", F, {GPU_RESOURCE: 3})
    assert (s.available, s.short) == (2, 1)
    alone.add("b", F, 6)
    assert alone.shortfalls("b", F, {GPU_RESOURCE: 1})[0].short == 5
