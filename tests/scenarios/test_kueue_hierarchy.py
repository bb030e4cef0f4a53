"""The ``kueue`` profile on cohort trees: borrowing level, who may preempt, hierarchical reclaim.

Written from Kueue's scheduler (kubernetes-sigs/kueue pkg/scheduler/flavorassigner
fitsResourceQuota, pkg/scheduler/preemption/classical hierarchical_preemption.go) and its
preemption doc ("Targets"); the arithmetic of each case is in its docstring. One flavor H100,
8-GPU nodes, one cycle at t = 10,000 (helpers from test_kueue_rules).
"""

from dataclasses import replace

import pytest
from tests.scenarios.test_kueue_rules import F, cq, cycle, on, preempted, ten, w

from gpufleet.model.tenancy import Cohort, FlavorQuota, KueueQueuePolicy, Tenancy, TenantQueue
from gpufleet.policies.kueue.cycle import NO_LONGER_FITS
from gpufleet.policies.kueue.flavors import borrowing_level
from gpufleet.policies.kueue.tree import lowest_subtree_height, potential_available
from gpufleet.policies.quota import QuotaLedger
from gpufleet.testing.builders import job


def q(name: str, cohort: str | None, nominal: int, **policy) -> TenantQueue:
    return TenantQueue(name, cohort, ((F, FlavorQuota(nominal)),), kueue=KueueQueuePolicy(**policy))


def lopsided() -> Tenancy:
    """org > {team > {a (8), sub > {x (8)}}, b (0)}: team is two high (sub is one), org three."""
    return Tenancy(tenants=(q("a", "team", 8), q("x", "sub", 8), q("b", "org", 0)),
                   cohorts=(Cohort("org"), Cohort("team", "org"), Cohort("sub", "team")))


def test_the_borrowing_level_is_the_height_of_the_lowest_subtree_that_fits_not_the_steps_up():
    """Kueue's FindHeightOfLowestSubtreeThatFits on the lopsided tree, a running 8 (its
    nominal), x idle. a asks 8 more: a borrows; team's subtree is 8 + 8 = 16 ≥ its usage 8 + 8,
    so the lowest fitting subtree is team, whose height is 1 + height(sub) = 2 (one step up).
    b asks 8: b's nominal is 0; org holds 16 ≥ 8 + 8: org, height 1 + height(team) = 3 (one
    step up). a asking 4 of nothing more than its nominal: 0."""
    led = QuotaLedger(lopsided())
    led.add("a", F, 8)
    assert borrowing_level(led, "a", F, 8) == 2
    assert borrowing_level(led, "b", F, 8) == 3
    assert borrowing_level(QuotaLedger(lopsided()), "a", F, 4) == 0
    assert lowest_subtree_height(led, "a", F, 8) == (2, True)    # team is below the root
    assert lowest_subtree_height(led, "b", F, 8) == (3, False)   # only the root holds it


def test_a_head_borrowing_in_a_lower_subtree_is_admitted_before_one_borrowing_at_the_root():
    """Same tree, 2 nodes (16 GPUs), a-1 running 8 on node 0, x idle: 8 free, both heads want
    them. a-2 (8, priority 0) is at level 2, b-1 (8, priority 5, older) at level 3. Kueue
    takes heads by borrowing level before priority: a-2 is admitted and b-1 finds org at
    16 + 8 > 16. Counting steps up (1 and 1) would tie them and admit b-1 by priority.
    Kueue's reason for the one left out: nominated while it fitted, it is skipped once the
    head before it took the quota ("no longer fits after processing another workload")."""
    r = cycle([on(w("a-1", "a", 8), 0)], [w("b-1", "b", 8, prio=5, submit=-10.0), w("a-2", "a", 8)],
              lopsided(), nodes=2)
    assert r.started == ("a-2",)
    assert r.statuses["b-1"].reasons[0] == NO_LONGER_FITS


def test_potential_capacity_counts_only_what_lending_and_borrowing_limits_let_through():
    """Kueue's potentialAvailable for a in c > {a (8, lending limit 2), b (8, borrowing limit
    4)}: c's subtree = 2 + 8 = 10 (a keeps 6); a can reach its 6 kept + 10 = 16; b can reach
    min(0 + 10, 8 + 4) = 10."""
    t = Tenancy(tenants=(TenantQueue("a", "c", ((F, FlavorQuota(8, None, 2)),)),
                         TenantQueue("b", "c", ((F, FlavorQuota(8, 4)),))), cohorts=(Cohort("c"),))
    led = QuotaLedger(t)
    assert potential_available(led, ("t", "a"), F) == 16
    assert potential_available(led, ("t", "b"), F) == 10


@pytest.mark.parametrize("borrow_within_cohort, expected", [
    ("Never", []),
    ("LowerPriority", [("a-low", "InClusterQueue")]),
])
def test_a_workload_asking_more_than_its_nominal_may_preempt_only_if_allowed_to_while_borrowing(
        borrow_within_cohort, expected):
    """a (nominal 8, withinClusterQueue LowerPriority) and b (nominal 8, idle) in cohort c, 2
    nodes. a runs a-low (8, priority 0); a-hi asks 16 (2 pods of 8) at priority 10. 16 > a's nominal 8; the
    only subtree that could hold it is c, the root (8 + 16 > 16 now), so a has no claim below
    the root. Kueue's fitsResourceQuota then looks for targets only when a may preempt while
    borrowing (borrowWithinCohort set): without it a-hi is NoFit and nothing is evicted, though
    evicting a-low would make room (0 + 16 ≤ 16); with it, a-low goes (InClusterQueue)."""
    a = cq("a", 8, within_cluster_queue="LowerPriority", borrow_within_cohort=borrow_within_cohort)
    hi = replace(job("x").tenant("a").gpus(8).gang(2).priority(10).runs(90_000).build(), id="a-hi")
    r = cycle([on(w("a-low", "a", 8), 0)], [hi], ten(a, cq("b", 8)), nodes=2)
    assert preempted(r) == expected


def test_a_queue_below_its_nominal_quota_tries_reclaiming_without_borrowing_first():
    """a (nominal 8, reclaimWithinCohort Any, withinClusterQueue LowerPriority) and b (nominal
    8) in cohort c, 2 nodes, all 16 used: node 0 a0 (a, 4 GPUs) + b2 (b, 4, newest), node 1 b1
    (b, 8). a-w asks 8 at priority 5. a uses 4 < 8 (below nominal, though 4 + 8 > 8), so Kueue
    tries without borrowing first (borrowWithinCohort Never, no hierarchical candidates): walk
    b2 (newest of b) — a still at 4 + 8 > 8; b1 is skipped (b is back at its nominal 8); a0 —
    a at 0 + 8 ≤ 8 and the cohort has 16 − 8 = 8 free: fits. Fill back: without b2 the
    cohort has 4 free: b2 stays. Requiring usage + request ≤ nominal before reclaiming would
    leave a-w waiting with nothing evicted."""
    a = cq("a", 8, reclaim_within_cohort="Any", within_cluster_queue="LowerPriority")
    run = [on(w("a0", "a", 4), 0), on(w("b2", "b", 4), 0, start=9_500.0), on(w("b1", "b", 8), 1)]
    r = cycle(run, [w("a-w", "a", 8, prio=5)], ten(a, cq("b", 8)), nodes=2)
    assert preempted(r) == [("a0", "InClusterQueue"), ("b2", "InCohortReclamation")]


def team_holds_quota(reclaim: str) -> Tenancy:
    """org > {team (cohort, nominal 8) > a (nominal 0), b (nominal 0)}."""
    return Tenancy(tenants=(q("a", "team", 0, reclaim_within_cohort=reclaim), q("b", "org", 0)),
                   cohorts=(Cohort("org"), Cohort("team", "org", ((F, FlavorQuota(8)),))))


@pytest.mark.parametrize("reclaim, expected", [
    ("Any", [("b-1", "InCohortReclamation")]),
    ("LowerPriority", []),   # b-1's priority 9 is not below a-1's 0
    ("Never", []),
])
def test_a_queue_without_quota_reclaims_its_cohorts_quota_from_a_borrower_elsewhere(reclaim, expected):
    """team_holds_quota, one node. b (nominal 0) runs b-1 (8, priority 9) on team's 8, lent
    through org. a-1 (8, priority 0) does not fit a's nominal 0, but team's subtree (8) holds
    it: a has a hierarchical advantage over b's workloads (Kueue's
    collectCandidatesForHierarchicalReclaim), so b-1 is a target whatever its priority as long
    as reclaimWithinCohort admits it (Any: yes; LowerPriority: 9 ≥ 0, no; Never: no
    candidates). a being above its nominal does not stop it: the request fits below the root."""
    r = cycle([on(w("b-1", "b", 8, prio=9), 0)], [w("a-1", "a", 8)], team_holds_quota(reclaim), nodes=1)
    assert preempted(r) == expected
