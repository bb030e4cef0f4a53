"""The ``kueue`` profile's fair sharing: Kueue's DRS and its tournament.

Written from Kueue's "Fair Sharing" concept doc and its code (kubernetes-sigs/kueue
pkg/cache/scheduler/fair_sharing.go, pkg/scheduler/fair_sharing_iterator.go); the arithmetic of
each case is in its docstring. 8-GPU nodes, one cycle at t = 10,000 (helpers from
test_kueue_rules).
"""

import math
from dataclasses import replace

import pytest
from tests.scenarios.test_kueue_rules import A100, NOW, F, cq, cycle, on, preempted, w

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.types import RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.kueue.resources import ResourceLedger
from gpufleet.policies.kueue.share import Drs, drs, share_ledger
from gpufleet.policies.quota import QuotaLedger, with_flavor
from gpufleet.testing.builders import job


def teams() -> Tenancy:
    """org > {team1 > {a (0), c (0)}, team2 > b (24)}, fair sharing on."""
    return Tenancy(tenants=(TenantQueue("a", "team1", ((F, FlavorQuota(0)),)),
                            TenantQueue("c", "team1", ((F, FlavorQuota(0)),)),
                            TenantQueue("b", "team2", ((F, FlavorQuota(24)),))),
                   cohorts=(Cohort("org"), Cohort("team1", "org"), Cohort("team2", "org")),
                   fair_sharing=True)


def test_a_share_counts_against_what_the_parent_can_reach_in_the_whole_tree():
    """team1 owns no quota, so its own subtree lends nothing; Kueue's lendable for a queue in
    it is what team1 could reach with no usage anywhere: 0 of its own + org's 24 (b's quota,
    lent up). a using 8 borrows 8: share 1000 × 8 / 24 = 333.3, not infinite; team1 (usage 8
    above its 0) at org: 1000 × 8 / 24 too."""
    led = QuotaLedger(teams())
    led.add("a", F, 8)
    assert drs(led, ("t", "a")).value == pytest.approx(1000 * 8 / 24)
    assert drs(led, ("c", "team1")).value == pytest.approx(1000 * 8 / 24)
    assert drs(led, ("t", "c")) == Drs()          # borrows nothing


def test_inside_a_cohort_without_quota_the_queue_with_the_lower_share_is_admitted_first():
    """teams(), 3 nodes (24 GPUs): a runs 8, b runs 8, 8 free. Heads a-x (8, priority 5) and
    c-x (8, priority 0). Kueue's tournament at team1 compares the queues' shares with their
    head admitted: a at 16 → 1000 × 16 / 24 = 666.7, c at 8 → 333.3: c-x wins team1 and, the
    only nominee, org; a-x then finds nothing free. (Shares infinite for both would tie and
    admit a-x by priority.)"""
    run = [on(w("a-1", "a", 8), 0), on(w("b-1", "b", 8), 1)]
    r = cycle(run, [w("a-x", "a", 8, prio=5), w("c-x", "c", 8)], teams(), nodes=3)
    assert r.started == ("c-x",)


def test_the_share_sums_a_resource_over_its_flavors_and_skips_what_nothing_lends():
    """c > {a (H100 0, A100 0), b (H100 8, A100 64)}, a borrowing 4 H100 and 32 A100. Kueue
    sums borrowing per resource name over flavors: 36 GPUs over the 8 + 64 = 72 lendable →
    1000 × 36 / 72 = 500 (the largest per-flavor ratio, 4 / 8 = 500 or 32 / 64, happens to
    agree; with 4 H100 alone it is 1000 × 4 / 72 = 55.6, not 500). With b's lending limits 0
    nothing is lendable: a borrows, with share 0, not infinity."""
    def tenancy(lend: int | None) -> Tenancy:
        b = TenantQueue("b", "c", ((F, FlavorQuota(8, None, lend)), (A100, FlavorQuota(64, None, lend))))
        a = TenantQueue("a", "c", ((F, FlavorQuota(0)), (A100, FlavorQuota(0))))
        return Tenancy(tenants=(a, b), cohorts=(Cohort("c"),), fair_sharing=True)
    led = QuotaLedger(tenancy(None))
    led.add("a", F, 4)
    assert drs(led, ("t", "a")).value == pytest.approx(1000 * 4 / 72)
    led.add("a", A100, 32)
    assert drs(led, ("t", "a")).value == pytest.approx(1000 * 36 / 72)
    none = QuotaLedger(tenancy(0))
    none.add("a", F, 4)
    d = drs(none, ("t", "a"))
    assert d.borrowing and d.value == 0.0 and not math.isinf(d.value)


def test_a_zero_weight_borrower_ranks_above_every_other_share():
    """Kueue's CompareDRS: weight 0 and borrowing ranks above any finite share, two such by
    their unweighted ratios; weight 0 without borrowing is share 0."""
    assert Drs(0.0, 10.0, True).key() > Drs(1.0, 1e9, True).key()
    assert Drs(0.0, 20.0, True).key() > Drs(0.0, 10.0, True).key()
    assert Drs(0.0, 0.0).value == 0.0


@pytest.mark.parametrize("strategies, expected", [
    (("LessThanOrEqualToFinalShare",), []),
    (("LessThanInitialShare",), [("x", "InCohortFairSharing")]),
    (("LessThanOrEqualToFinalShare", "LessThanInitialShare"), [("z", "InCohortFairSharing")]),
])
def test_rule_s2b_picks_its_queue_after_what_rule_s2a_evicted(strategies, expected):
    """Kueue's fairPreemptions: rule S2-a (the first strategy) over every candidate, then rule
    S2-b (``runSecondFsStrategy``: LessThanInitialShare over the candidates S2-a refused, target
    queues re-ordered by their share *after* S2-a's evictions, each queue's first candidate, one
    per queue). Five 8-GPU nodes, lendable 40 (1 GPU borrowed = 25). a (nominal 8, running 8),
    c (nominal 32, running 14 of it), b and d (nominal 0) borrowing; every GPU in use.
    b runs x (6, newest) and y (4): borrows 10 → 250. d runs z (8) → 200. a-w asks 5: a's share
    with it 125; nothing is free, so 5 must be freed.
    S2-a (LessThanOrEqualToFinalShare), b first (250): x leaves b at 100, 125 ≤ 100 no; y leaves
    b at 150, 125 ≤ 150 yes: y goes, 4 free, not enough. d: z leaves it at 0, no.
    S2-b over {x, z}: the queues now stand d 200, b 150: d first, 125 < 200: z goes, 12 free, a-w
    fits; fill-back then spares y (z alone frees 8 ≥ 5). Victim: z.
    LessThanInitialShare alone takes b's first candidate at b's initial 250: x. S2-a alone frees 4
    of 5: nothing. So the pair's answer is S2-b's own: ordered on S2-a's result, not the start."""
    run = [on(w("a0", "a", 8), 0), on(w("x", "b", 6), 1, start=9_900.0), on(w("c1", "c", 2), 1),
           on(w("y", "b", 4), 2, start=9_800.0), on(w("c2", "c", 4), 2), on(w("z", "d", 8), 3),
           on(w("c0", "c", 8), 4)]
    t = Tenancy(tenants=(cq("a", 8, reclaim_within_cohort="Any"), cq("b", 0), cq("c", 32), cq("d", 0)),
                cohorts=(Cohort("c"),), fair_sharing=True, fair_sharing_strategies=strategies)
    r = cycle(run, [w("a-w", "a", 5, prio=1)], t, nodes=5)
    assert preempted(r) == expected


def cpu_teams() -> Tenancy:
    """a, b (8 GPUs, 32 cores each) and c (16 GPUs, 64 cores, idle: it lends all) in cohort co,
    fair sharing on. Lendable in co: 32 GPUs and 128 cores."""
    def q(name: str, gpus: int, cores: float) -> TenantQueue:
        return TenantQueue(name, "co", ((F, FlavorQuota(gpus)),), resources=((F, "cpu", FlavorQuota(cores)),))
    return Tenancy(tenants=(q("a", 8, 32), q("b", 8, 32), q("c", 16, 64)), cohorts=(Cohort("co"),),
                   fair_sharing=True)


def cpu_job(name: str, tenant: str, gpus: int, cores: float):
    return replace(job("x").tenant(tenant).gpus(gpus).cpus(cores).runs(90_000).build(), id=name)


def test_the_share_counts_cpu_when_it_is_the_dominant_resource():
    """Kueue's dominantResourceShare takes every resource name. a runs a0 (8 GPUs, 64 cores):
    GPUs within its 8, cores 32 over its 32 of 128 lendable → 1000 × 32 / 128 = 250, GPUs 0.
    A GPU-only share would call a not borrowing at all."""
    t = cpu_teams()
    run = [on_cpu(cpu_job("a0", "a", 8, 64), 0)]
    ledger = share_ledger(QuotaLedger.from_running(t, run), ResourceLedger.from_running(t, run))
    d = drs(ledger, ("t", "a"))
    assert d.borrowing and d.value == 250.0
    assert not drs(QuotaLedger.from_running(t, run), ("t", "a")).borrowing


def test_a_queue_borrowing_more_cpu_than_gpus_yields_to_one_borrowing_fewer_of_either():
    """The tournament admits the head whose queue's share, with it, is lower. a runs a0 (8 GPUs,
    64 cores); a-w asks 8 GPUs and 8 cores: a's GPUs 16, borrowing 8 → 1000 × 8/32 = 250; cores
    72, borrowing 40 → 1000 × 40/128 = 312.5: share 312.5. b runs b0 (8) and b1 (1) with 1 core
    each; b-w asks 8 GPUs, 1 core: GPUs 17, borrowing 9 → 281.25; cores 3, none borrowed:
    281.25. By GPUs alone a-w (250) would go first; with cpu, b-w (281.25 < 312.5). Quota
    left: 32 − 17 = 15 GPUs, room for one 8-GPU head: b-w is admitted, a-w waits. Four 8-GPU
    nodes: a0 on 0, b0 on 1, b1 on 2; the admitted head takes node 3."""
    t = cpu_teams()
    run = [on_cpu(cpu_job("a0", "a", 8, 64), 0), on_cpu(cpu_job("b0", "b", 8, 1), 1),
           on_cpu(cpu_job("b1", "b", 1, 1), 2)]
    r = cycle(run, [cpu_job("a-w", "a", 8, 8), cpu_job("b-w", "b", 8, 1)], t, nodes=4)
    assert r.started == ("b-w",)


def on_cpu(j, node: int):
    jj = with_flavor(j, F)
    ps = jj.pod_sets[0]
    return RunningJob(jj, NOW - 1_000, (PodBinding(j.id, ps.name, 0, node, ps.request),))
