"""The ``kueue`` profile decides as Kueue's documented rules say, one scenario per rule.

Each scenario is written from Kueue's concept docs (ClusterQueue, Cohort, Preemption, Fair
Sharing; kubernetes-sigs/kueue site/content/en/docs/concepts), not from our code. Tenants are
ClusterQueues, one flavor H100-80GB, 8-GPU nodes, one cycle at t = 10,000. Outcomes as data:
who is preempted and why (Kueue's reasons InClusterQueue, InCohortReclamation, …), who waits.
"""

import math
from dataclasses import replace

import pytest

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Cohort, FlavorQuota, KueueQueuePolicy, Tenancy, TenantQueue
from gpufleet.policies.kueue.cycle import INSUFFICIENT_QUOTA, NO_LONGER_FITS, STRICT_FIFO_BLOCKED
from gpufleet.policies.kueue.flavors import borrowing_level
from gpufleet.policies.kueue.share import share_path, weighted_share
from gpufleet.policies.quota import QuotaLedger, with_flavor
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job

F = "H100-80GB"
NOW = 10_000.0


def cq(name: str, nominal: int, cohort: str | None = "c", weight: float = 1.0, **policy) -> TenantQueue:
    return TenantQueue(name, cohort, ((F, FlavorQuota(nominal)),), weight, kueue=KueueQueuePolicy(**policy))


def ten(*queues: TenantQueue, fair: tuple[str, ...] | None = None) -> Tenancy:
    cohorts = (Cohort("c"),) if any(q.cohort for q in queues) else ()
    if fair is None:
        return Tenancy(tenants=queues, cohorts=cohorts)
    return Tenancy(tenants=queues, cohorts=cohorts, fair_sharing=True, fair_sharing_strategies=fair)


def w(name: str, tenant: str, gpus: int, prio: int = 0, submit: float = 0.0) -> Job:
    return replace(job("x").tenant(tenant).gpus(gpus).priority(prio).at(submit).runs(90_000).build(), id=name)


def on(j: Job, node: int, start: float = NOW - 1_000) -> RunningJob:
    jj = with_flavor(j, F)
    ps = jj.pod_sets[0]
    return RunningJob(jj, start, (PodBinding(j.id, ps.name, 0, node, ps.request),))


def cycle(run: list[RunningJob], pending: list[Job], tenancy: Tenancy, nodes: int):
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=nodes).build())
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    return run_cycle(CycleInput(NOW, table, [PendingJob(j) for j in pending], profile("kueue"),
                                running=run, tenancy=tenancy))


def preempted(r) -> list[tuple[str, str]]:
    return sorted((p.job, p.reason) for p in r.preemptions)


@pytest.mark.parametrize("policy, expected", [
    ("Never", []),
    ("LowerPriority", [("a-low", "InClusterQueue")]),
])
def test_within_cluster_queue_decides_whether_lower_priority_work_of_the_queue_is_preempted(policy, expected):
    """One node, one queue a (nominal 8, no cohort) running a-low (8 GPUs, priority 0). a-hi (8,
    priority 10) does not fit the unused quota (8 + 8 > 8). withinClusterQueue: Never (Kueue's
    default) keeps a-low; LowerPriority evicts it (0 < 10)."""
    r = cycle([on(w("a-low", "a", 8), 0)], [w("a-hi", "a", 8, prio=10)],
              ten(cq("a", 8, cohort=None, within_cluster_queue=policy)), nodes=1)
    assert preempted(r) == expected
    if not expected:
        assert r.statuses["a-hi"].code is StatusCode.NOT_ADMITTED
        assert r.statuses["a-hi"].reasons[0] == INSUFFICIENT_QUOTA


@pytest.mark.parametrize("policy, running_submit, expected", [
    ("LowerPriority", 500.0, []),                                   # equal priority: never
    ("LowerOrNewerEqualPriority", 500.0, [("a-run", "InClusterQueue")]),  # equal and newer
    ("LowerOrNewerEqualPriority", 50.0, []),                        # equal but older
])
def test_lower_or_newer_equal_priority_also_preempts_equal_priority_work_submitted_later(
        policy, running_submit, expected):
    """a (nominal 8, one node) runs a-run (priority 0, submitted at 500 or 50); a-old (priority 0,
    submitted at 100) is pending. LowerOrNewerEqualPriority preempts an equal-priority workload
    only when it is newer than the preemptor: 500 > 100 yes, 50 > 100 no."""
    r = cycle([on(w("a-run", "a", 8, submit=running_submit), 0)], [w("a-old", "a", 8, submit=100.0)],
              ten(cq("a", 8, cohort=None, within_cluster_queue=policy)), nodes=1)
    assert preempted(r) == expected


@pytest.mark.parametrize("policy, expected", [
    ("Never", []),
    ("LowerPriority", []),                                   # b's jobs have priority 3, 5 ≥ 1
    ("Any", [("b1", "InCohortReclamation")]),                # lowest priority first: b1 (3)
])
def test_reclaim_within_cohort_takes_back_lent_quota_by_the_queue_policy(policy, expected):
    """a and b (nominal 8 each) share cohort c on 2 nodes. b runs b1 (priority 3) and b2
    (priority 5), 8 GPUs each: 16, so 8 borrowed. a-1 (8 GPUs, priority 1) fits a's nominal
    (0 + 8 ≤ 8) but the cohort has 16 − 16 = 0 unused: it needs preemption. Never: nothing;
    LowerPriority: only b workloads below priority 1, none; Any: candidates sorted by lower
    priority first, b1; after it b is at 8 = nominal, so b2 is no longer a candidate."""
    run = [on(w("b1", "b", 8, prio=3), 0), on(w("b2", "b", 8, prio=5), 1)]
    r = cycle(run, [w("a-1", "a", 8, prio=1)], ten(cq("a", 8, reclaim_within_cohort=policy), cq("b", 8)),
              nodes=2)
    assert preempted(r) == expected


@pytest.mark.parametrize("borrow, threshold, expected", [
    ("Never", None, []),
    ("LowerPriority", 5, [("b0", "InCohortReclaimWhileBorrowing")]),
    ("LowerPriority", 1, []),
])
def test_borrow_within_cohort_lets_a_borrowing_workload_preempt_up_to_the_threshold(borrow, threshold,
                                                                                     expected):
    """a, b, c nominal 8 each, 3 nodes (24 GPUs). a runs a0 (8), b runs b0 (priority 2) and b1
    (priority 7), c nothing: 24 used, c's 8 lent to b. a-hi (8, priority 10) would borrow
    (8 + 8 > 8), so reclaim alone does not apply. borrowWithinCohort LowerPriority with
    maxPriorityThreshold 5: b0 (2 ≤ 5) is a target, b1 (7 > 5) is not; after b0, a borrows
    8 of the 8 the cohort then has free. Threshold 1: neither; Never: no cohort candidates,
    and a's own a0 is protected by withinClusterQueue Never."""
    run = [on(w("a0", "a", 8), 0), on(w("b0", "b", 8, prio=2), 1), on(w("b1", "b", 8, prio=7), 2)]
    a = cq("a", 8, reclaim_within_cohort="Any", borrow_within_cohort=borrow, max_priority_threshold=threshold)
    r = cycle(run, [w("a-hi", "a", 8, prio=10)], ten(a, cq("b", 8), cq("c", 8)), nodes=3)
    assert preempted(r) == expected


@pytest.mark.parametrize("strategy, small_admitted", [("BestEffortFIFO", True), ("StrictFIFO", False)])
def test_strict_fifo_holds_the_queue_behind_a_head_that_does_not_fit(strategy, small_admitted):
    """a (nominal 8, no cohort), 2 empty nodes. a-big (16 GPUs, priority 5) heads the queue and
    can never fit a's 8; a-small (8, priority 0) would. BestEffortFIFO admits and starts a-small;
    StrictFIFO keeps it pending behind a-big."""
    r = cycle([], [w("a-big", "a", 16, prio=5), w("a-small", "a", 8)],
              ten(cq("a", 8, cohort=None, queueing_strategy=strategy)), nodes=2)
    assert ("a-small" in r.started) is small_admitted
    if not small_admitted:
        assert r.statuses["a-small"].reasons[0] == STRICT_FIFO_BLOCKED


def test_classic_kueue_admits_non_borrowing_heads_before_borrowing_ones():
    """a (nominal 8) and b (nominal 0) share cohort c; one node of 8, nothing running. b-1 (8
    GPUs, priority 5, submitted first) can only borrow; a-1 (8, priority 0) fits a's nominal.
    Kueue serves heads that do not borrow first, whatever their priority: a-1 takes the 8 of
    quota, and b-1 finds 8 − 8 = 0 to borrow.
    Kueue's reason for the one left out: nominated while it fitted, it is skipped once the
    head before it took the quota ("no longer fits after processing another workload")."""
    r = cycle([], [w("b-1", "b", 8, prio=5, submit=-10.0), w("a-1", "a", 8)],
              ten(cq("a", 8), cq("b", 0)), nodes=1)
    assert r.started == ("a-1",)
    assert r.statuses["b-1"].reasons[0] == NO_LONGER_FITS


def test_kueue_weighted_share_is_borrowed_over_lendable_per_weight():
    """a, b, c nominal 8 each: lendable 24. b uses 16 (borrows 8): share = 1000 × 8 / 24 = 333.3;
    with weight 2 it is 166.7; a at 8 borrows nothing: 0; weight 0 and borrowing: infinite."""
    t = ten(cq("a", 8), cq("b", 8, weight=2.0), cq("c", 8, weight=0.0))
    led = QuotaLedger(t)
    led.add("a", F, 8)
    led.add("b", F, 16)
    led.add("c", F, 12)
    assert weighted_share(led, "a") == 0.0
    assert weighted_share(led, "b") == pytest.approx(1000 * 8 / 24 / 2)
    assert weighted_share(led, "c") == float("inf")
    assert weighted_share(led, "a", (F, 4)) == pytest.approx(1000 * 4 / 24)


@pytest.mark.parametrize("strategies, expected", [
    (("LessThanOrEqualToFinalShare",), []),
    (("LessThanInitialShare",), [("b0", "InCohortFairSharing")]),
    (("LessThanOrEqualToFinalShare", "LessThanInitialShare"), [("b0", "InCohortFairSharing")]),
])
def test_fair_sharing_preempts_by_its_strategies_in_order(strategies, expected):
    """Fair sharing on. a, b nominal 8, c nominal 24 (idle, lends all): lendable 40, 5 nodes.
    b runs b0, b1, b2 (8 each, newest b0): 24, borrowing 16 → share 1000 × 16 / 40 = 400.
    a runs a0 (8) and a1 (4): 12, borrowing 4. a-w (8 GPUs) would bring a to 20, borrowing 12
    → share 300; 36 of 40 used, 4 free: it needs a preemption.
    LessThanOrEqualToFinalShare: 300 ≤ share(b without an 8-GPU job) = 1000 × 8 / 40 = 200? no.
    LessThanInitialShare: 300 < 400 yes → b0 (newest of b, the candidate order). The default
    list tries the first, then falls back to the second."""
    run = [on(w(f"b{i}", "b", 8), i, start=NOW - 100 * (i + 1)) for i in range(3)]
    run += [on(w("a0", "a", 8), 3), on(w("a1", "a", 4), 4)]
    t = ten(cq("a", 8, reclaim_within_cohort="Any"), cq("b", 8), cq("c", 24), fair=strategies)
    r = cycle(run, [w("a-w", "a", 8, prio=1)], t, nodes=5)
    assert preempted(r) == expected


def test_our_profile_keeps_a_within_nominal_job_admitted_where_kueue_leaves_it_pending():
    """The difference docs/kueue.md argues: the same state as the reclaim scenario (b borrows 8,
    a-1 fits a's nominal). Ours admits a-1 (a guarantee is a promise) and reclaims; Kueue with
    its default policy (reclaimWithinCohort Never) leaves it pending with no preemption at all."""
    run = [on(w("b1", "b", 8, prio=3), 0), on(w("b2", "b", 8, prio=5), 1)]
    t = ten(cq("a", 8), cq("b", 8))
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    ours = run_cycle(CycleInput(NOW, table, [PendingJob(w("a-1", "a", 8, prio=1))], profile("tenancy"),
                                running=run, tenancy=t))
    kueue = cycle(run, [w("a-1", "a", 8, prio=1)], t, nodes=2)
    assert [p.for_job for p in ours.preemptions] == ["a-1"]
    assert kueue.preemptions == () and kueue.statuses["a-1"].code is StatusCode.NOT_ADMITTED


A100 = "A100-80GB"


def two_flavor_cycle(run, pending, tenancy):
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).leaves(1, nodes=1, gpu=A100).build())
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    return run_cycle(CycleInput(NOW, table, [PendingJob(j) for j in pending], profile("kueue"),
                                running=run, tenancy=tenancy))


@pytest.mark.parametrize("when_can_borrow, flavor", [("Borrow", F), ("TryNextFlavor", A100)])
def test_flavor_fungibility_borrows_on_the_first_flavor_or_tries_the_next(when_can_borrow, flavor):
    """a's flavors in order: H100 (nominal 8) then A100 (nominal 8); b has H100 nominal 8 and runs
    nothing, lending it. a runs 8 on H100 already. a-2 (8 GPUs, any model) fits H100 only by
    borrowing b's 8 and A100 without borrowing. whenCanBorrow Borrow: H100 (the first flavor
    where it fits); TryNextFlavor: A100. Nodes 0-1 are H100, node 2 is A100."""
    a = TenantQueue("a", "c", ((F, FlavorQuota(8)), (A100, FlavorQuota(8))),
                    kueue=KueueQueuePolicy(when_can_borrow=when_can_borrow))
    t = Tenancy(tenants=(a, cq("b", 8)), cohorts=(Cohort("c"),))
    r = two_flavor_cycle([on(w("a-1", "a", 8), 0)], [w("a-2", "a", 8)], t)
    assert r.started == ("a-2",)
    node = next(b.node for b in r.bindings if b.job == "a-2")
    assert (node == 2) is (flavor == A100)


@pytest.mark.parametrize("cpus, admitted", [(64.0, True), (96.0, False)])
def test_quota_on_cpu_refuses_a_workload_whose_gpus_fit(cpus, admitted):
    """a covers GPUs (nominal 8) and cpu (nominal 128) on H100, no cohort; it runs a-1 with 64
    cores and 0 GPUs. a-2 asks 8 GPUs (fits: 0 + 8 ≤ 8) and c cores: 64 + 64 = 128 ≤ 128 is
    admitted, 64 + 96 = 160 > 128 is not, though its GPUs fit."""
    a = TenantQueue("a", None, ((F, FlavorQuota(8)),),
                    resources=((F, "cpu", FlavorQuota(128)),))
    t = Tenancy(tenants=(a,))
    cpu_job = replace(job("x").tenant("a").gpus(0).cpus(64).models(F).runs(90_000).build(), id="a-1")
    gpu_job = replace(job("x").tenant("a").gpus(8).cpus(cpus).runs(90_000).build(), id="a-2")
    r = cycle([on(cpu_job, 0)], [gpu_job], t, nodes=1)
    assert ("a-2" in r.started) is admitted
    if not admitted:
        assert r.statuses["a-2"].reasons[0] == INSUFFICIENT_QUOTA


def test_a_hierarchical_cohort_lends_a_sibling_teams_quota_through_the_parent():
    """org > {team1 > a, team2 > b}; a nominal 8, b nominal 8, 2 nodes. b runs nothing, so its 8
    are lendable up the tree to org and down to team1: a-2 (8 more GPUs while a runs 8) is
    admitted by borrowing. With b's lending limit 0 nothing is lendable and a-2 waits."""
    for lend, admitted in ((None, True), (0, False)):
        t = Tenancy(tenants=(TenantQueue("a", "team1", ((F, FlavorQuota(8)),)),
                             TenantQueue("b", "team2", ((F, FlavorQuota(8, None, lend)),))),
                    cohorts=(Cohort("org"), Cohort("team1", "org"), Cohort("team2", "org")))
        r = cycle([on(w("a-1", "a", 8), 0)], [w("a-2", "a", 8)], t, nodes=2)
        assert ("a-2" in r.started) is admitted, lend


def test_quota_already_being_released_is_waited_for_not_preempted_for_again():
    """The reclaim scenario one cycle later: b1 is under eviction notice (its 8 GPUs are going).
    a-1 fits a's nominal once b1 is gone, so Kueue preempts nobody else (b2 keeps running)."""
    run = [replace(on(w("b1", "b", 8, prio=3), 0), evicting=True, evict_at=NOW + 30),
           on(w("b2", "b", 8, prio=5), 1)]
    r = cycle(run, [w("a-1", "a", 8, prio=1)],
              ten(cq("a", 8, reclaim_within_cohort="Any"), cq("b", 8)), nodes=2)
    assert r.preemptions == ()
    assert "evicted workloads are releasing" in r.statuses["a-1"].reasons[-1]


@pytest.mark.parametrize("reclaim, b3_started, preempted_jobs", [
    ("Never", False, []),
    ("Any", False, [("b2", "InCohortReclamation")]),
])
def test_a_head_that_needs_preemption_holds_its_idle_nominal_quota_against_later_borrowers(
        reclaim, b3_started, preempted_jobs):
    """Kueue's scheduler keeps a lender's own head from being starved within a cycle. a and b
    (nominal 8 each) share cohort c, 2 nodes. b runs b1 (8) and b2 (4): 12, borrowing 4 of a's.
    a runs nothing. a-1 (8 GPUs) fits a's nominal (0 + 8 ≤ 8) but the cohort has 16 − 12 = 4
    unused: it needs preemption. b-3 (4 GPUs) would borrow b's way to 16 and fits the 4 unused.
    Heads by borrowing level: a-1 (0) before b-3 (1).
    reclaimWithinCohort Never: a-1 has no targets and a cannot always reclaim, so Kueue reserves
    min(8, 8 − 0) = 8 of a's quota for the cycle (reserveCapacityForUnreclaimablePreempt):
    usage 12 + 8 = 20 > 16, b-3 stays pending, nobody is preempted.
    Any: a-1 preempts b2 (the newest of the borrowing queue, after which b is at 8 = nominal) and
    its 8 GPUs count as used for the cycle, so b-3 cannot take the 4 either. Without the hold,
    b-3 would start and a would be 8 GPUs further from its guarantee.
    Kueue's reason for the one left out: nominated while it fitted, it is skipped once the
    head before it took the quota ("no longer fits after processing another workload")."""
    run = [on(w("b1", "b", 8), 0, start=NOW - 2_000), on(w("b2", "b", 4), 1)]
    r = cycle(run, [w("a-1", "a", 8), w("b-3", "b", 4)],
              ten(cq("a", 8, reclaim_within_cohort=reclaim), cq("b", 8)), nodes=2)
    assert ("b-3" in r.started) is b3_started
    assert r.statuses["b-3"].reasons[0] == NO_LONGER_FITS
    assert preempted(r) == preempted_jobs


def test_heads_borrowing_nearer_in_the_cohort_tree_are_admitted_before_farther_ones():
    """Kueue orders heads by borrowing level (Assignment.Borrows: 0 = no borrowing, k = the
    nearest cohort k levels up whose subtree has room), before priority. org > {team1 > {a, b},
    team2 > {c, d}}; nominal a 8, b 8, c 8, d 0; 3 nodes (24 GPUs). a runs a-1 (8), c runs c-1
    (8); b's 8 are idle, so 8 GPUs are free.
    a-2 (8, priority 0): a at 16 > 8; team1's subtree holds 8 + 8 = 16 ≥ its usage 16: level 1.
    d-1 (8, priority 5, submitted first): d at 8 > 0; team2's subtree holds 8 < 16; org's holds
    24 ≥ 8 + 16: level 2.
    Level 1 goes first: a-2 takes the 8, then d-1 finds org at 32 > 24 and waits, though its
    priority is higher and it is older.
    Kueue's reason for the one left out: nominated while it fitted, it is skipped once the
    head before it took the quota ("no longer fits after processing another workload")."""
    t = Tenancy(tenants=(TenantQueue("a", "team1", ((F, FlavorQuota(8)),)),
                         TenantQueue("b", "team1", ((F, FlavorQuota(8)),)),
                         TenantQueue("c", "team2", ((F, FlavorQuota(8)),)),
                         TenantQueue("d", "team2", ((F, FlavorQuota(0)),))),
                cohorts=(Cohort("org"), Cohort("team1", "org"), Cohort("team2", "org")))
    led = QuotaLedger(t)
    led.add("a", F, 8)
    led.add("c", F, 8)
    assert borrowing_level(led, "a", F, 8) == 1
    assert borrowing_level(led, "d", F, 8) == 2
    assert borrowing_level(led, "b", F, 8) == 0
    r = cycle([on(w("a-1", "a", 8), 0), on(w("c-1", "c", 8), 1)],
              [w("d-1", "d", 8, prio=5, submit=-10.0), w("a-2", "a", 8)], t, nodes=3)
    assert r.started == ("a-2",)
    assert r.statuses["d-1"].reasons[0] == NO_LONGER_FITS


def test_kueue_minimises_victims_from_the_last_target_back_sparing_later_candidates():
    """What Kueue's reverse pass minimises. a (nominal 8, reclaimWithinCohort Any) and b
    (nominal 16) share cohort c on 3 nodes; b holds all 24 (borrowing 8): node 0 r (6 GPUs) +
    p (2), node 1 q (2) + h1 (6), node 2 h2 (8). Candidates in Kueue's order (lower priority,
    then newest): p (prio 0, newest), q (prio 0), r (prio 0, oldest), then h1, h2 (prio 5).
    a-1 asks 8 GPUs as 4 pods of 2. Walk: p (2 free) no; p, q (4) no; p, q, r (10) fits.
    Reverse pass: r is needed ({p, q} did not fit); without q, {p, r} frees node 0 (8): fits,
    drop q; without p, {r} frees 6 < 8: keep p. Victims {p, r}. A forward pass would have
    dropped p first ({q, r} frees 6 + 2 = 8 in pods of 2) and evicted {q, r}: Kueue spares the
    candidate it ranks later (cost 2^i for the i-th walked target: 1 + 4 = 5 < 2 + 4 = 6)."""
    def two(j: Job, node: int, start: float) -> RunningJob:
        jj = with_flavor(j, F)
        ps = jj.pod_sets[0]
        return RunningJob(jj, start, tuple(PodBinding(j.id, ps.name, i, node, ps.request)
                                           for i in range(ps.replicas)))
    run = [two(w("r", "b", 6), 0, NOW - 3_000), two(w("p", "b", 2), 0, NOW - 100),
           two(w("q", "b", 2), 1, NOW - 200), two(w("h1", "b", 6, prio=5), 1, NOW - 50),
           two(w("h2", "b", 8, prio=5), 2, NOW - 50)]
    a1 = replace(job("x").tenant("a").gpus(2).gang(4).runs(90_000).build(), id="a-1")
    r = cycle(run, [a1], ten(cq("a", 8, reclaim_within_cohort="Any"), cq("b", 16)), nodes=3)
    assert preempted(r) == [("p", "InCohortReclamation"), ("r", "InCohortReclamation")]


@pytest.mark.parametrize("when_can_preempt, when_can_borrow, expected", [
    ("Preempt", "Borrow", [("a-low", "InClusterQueue")]),
    ("TryNextFlavor", "Borrow", [("b2", "InCohortReclamation")]),
    ("Preempt", "TryNextFlavor", [("a-low", "InClusterQueue")]),
])
def test_when_can_preempt_stops_on_the_first_preempting_flavor_or_takes_the_best_mode(
        when_can_preempt, when_can_borrow, expected):
    """Kueue's flavor assigner (shouldTryNextFlavor, isPreferred). a has H100 (nominal 8) then
    A100 (nominal 8), withinClusterQueue LowerPriority, reclaimWithinCohort Any; b has H100 8,
    A100 0; cohort c. Nodes 0-1 H100, node 2 A100. a runs a-low (8, priority 0) on H100; b runs
    b1 (8) on H100, at its nominal, and b2 (8) on A100, borrowing a's 8. a-hi (8, priority 10):
    H100: a would be at 16 > 8 (borrowing) and the cohort's 16 are used; only a-low (own queue)
    can make room: mode *preempt*; once a-low is gone a is at 0 + 8 ≤ 8, so the borrowing level
    after preemption (Kueue's borrowAfterPreemptions, what shouldTryNextFlavor reads) is 0.
    A100: a at 0 + 8 ≤ 8 (no borrowing); b2 borrows: mode *reclaim*.
    whenCanPreempt Preempt + whenCanBorrow Borrow: the search stops at H100 → a-low is evicted.
    TryNextFlavor: both flavors are seen; reclaim beats preempt → A100, b2 is evicted.
    Preempt + whenCanBorrow TryNextFlavor: H100 preempts without borrowing after the
    preemption, which stops the search too → a-low. (Judging "borrows" before the preemption
    would try A100 and reclaim b2.)"""
    pol = KueueQueuePolicy(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any",
                           when_can_preempt=when_can_preempt, when_can_borrow=when_can_borrow)
    a = TenantQueue("a", "c", ((F, FlavorQuota(8)), (A100, FlavorQuota(8))), kueue=pol)
    b = TenantQueue("b", "c", ((F, FlavorQuota(8)), (A100, FlavorQuota(0))))
    t = Tenancy(tenants=(a, b), cohorts=(Cohort("c"),))
    b2 = with_flavor(w("b2", "b", 8), A100)
    ps = b2.pod_sets[0]
    run = [on(w("a-low", "a", 8), 0), on(w("b1", "b", 8), 1),
           RunningJob(b2, NOW - 1_000, (PodBinding("b2", ps.name, 0, 2, ps.request),))]
    r = two_flavor_cycle(run, [w("a-hi", "a", 8, prio=10)], t)
    assert preempted(r) == expected


@pytest.mark.parametrize("afs, lq_b_weight, started", [
    (False, 1.0, {"a-1", "a-2"}),   # no admission fair sharing: FIFO within the ClusterQueue
    (True, 1.0, {"b-1", "a-1"}),    # lq-b first (no usage), then the entry penalty flips it
    (True, 4.0, {"b-1", "b-2"}),    # weight 4: lq-b's penalty counts a quarter
])
def test_admission_fair_sharing_orders_a_queue_by_local_queue_usage_with_an_entry_penalty(
        afs, lq_b_weight, started):
    """Kueue's admission fair sharing (KEP-4136). ClusterQueue shared (nominal 8, no cohort), one
    node of 8; LocalQueues lq-a and lq-b; half-life H = 600 s, sampling interval Δ = 300 s. All
    four jobs want 4 GPUs at priority 0; a-1, a-2 (lq-a) were submitted before b-1, b-2 (lq-b).
    lq-a's decayed history is D = 432.81 GPU-s: usage λ·D = (ln 2 / 600) × 432.81 = 0.500 GPUs;
    lq-b has none (0).
    Without admission fair sharing: FIFO, a-1 and a-2 fill the 8.
    With it: lq-b (0) before lq-a (0.5): b-1 is admitted and pays the entry penalty
    A·g = (1 − 0.5^(300/600)) × 4 = 0.2929 × 4 = 1.172 GPUs; now lq-a (0.5) < lq-b (1.172): a-1
    takes the last 4. With lq-b's weight 4 its score is 1.172 / 4 = 0.293 < 0.5: b-2 goes next."""
    label = "kueue.x-k8s.io/queue-name"
    jobs = [replace(w(n, "shared", 4, submit=s), labels=((label, lq),))
            for n, lq, s in (("a-1", "lq-a", 1.0), ("a-2", "lq-a", 2.0), ("b-1", "lq-b", 3.0),
                             ("b-2", "lq-b", 4.0))]
    t = Tenancy(tenants=(cq("shared", 8, cohort=None, admission_fair_sharing=afs),), half_life_s=600.0,
                afs_sampling_s=300.0, local_queue_weights=(("lq-b", lq_b_weight),))
    assert 600.0 / math.log(2) * 0.5 == pytest.approx(432.81, abs=0.01)
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=1).build())
    r = run_cycle(CycleInput(NOW, table, [PendingJob(j) for j in jobs], profile("kueue"), tenancy=t,
                             usage={"lq:lq-a": 432.81, "shared": 432.81}))
    assert set(r.started) == started


@pytest.mark.parametrize("team1_weight, first", [(1.0, "b-x"), (4.0, "a-x")])
def test_a_cohorts_fair_sharing_weight_decides_between_teams_before_their_queues(team1_weight, first):
    """Fair sharing with hierarchical cohorts: org > {team1 > a, team2 > b, team3 > c}; nominal a 8,
    b 8, c 16 (idle, lends all); 4 nodes (32 GPUs). a runs 16 (borrowing 8), b runs 8; 8 free.
    Heads a-x and b-x, 8 GPUs each; the share of each head's path with it admitted, at org:
    team1: usage 24 − its subtree 8 = 16 borrowed of org's lendable 8 + 8 + 16 = 32 → 1000 × 16
    / 32 = 500 ÷ weight(team1); team2: 16 − 8 = 8 → 250. Weight 1: b-x (250 < 500) takes the 8,
    a-x waits. team1's weight 4: 500 / 4 = 125 < 250, a-x goes first. The queues' own weights
    (1 each) never come into it: the teams differ at org, the common ancestor."""
    t = Tenancy(tenants=(TenantQueue("a", "team1", ((F, FlavorQuota(8)),)),
                         TenantQueue("b", "team2", ((F, FlavorQuota(8)),)),
                         TenantQueue("c", "team3", ((F, FlavorQuota(16)),))),
                cohorts=(Cohort("org"), Cohort("team1", "org", weight=team1_weight), Cohort("team2", "org"),
                         Cohort("team3", "org")), fair_sharing=True)
    run = [on(w("a-1", "a", 8), 0), on(w("a-2", "a", 8), 1), on(w("b-1", "b", 8), 2)]
    led = QuotaLedger(t)
    led.add("a", F, 16)
    led.add("b", F, 8)
    assert share_path(led, "a", (F, 8))[0] == pytest.approx(500 / team1_weight)
    assert share_path(led, "b", (F, 8))[0] == pytest.approx(250)
    r = cycle(run, [w("a-x", "a", 8), w("b-x", "b", 8)], t, nodes=4)
    assert r.started == (first,)


def test_pod_sets_of_one_workload_are_assigned_flavors_one_by_one():
    """Kueue assigns flavors per pod set. a (no cohort) has H100 (nominal 8) then A100 (nominal
    8); nodes 0-1 H100, node 2 A100; nothing runs. The workload: pod set trainer (1 × 8 GPUs),
    then eval (1 × 4 GPUs), any model. trainer: H100 0 + 8 ≤ 8 → H100. eval: H100 8 + 4 > 8, no
    cohort to borrow from → A100 0 + 4 ≤ 8 → A100. Admitted and started across both models; as
    one 12-GPU block it would fit neither flavor's 8."""
    base = replace(job("x").tenant("a").gpus(8).runs(90_000).build(), id="mixed")
    trainer = replace(base.pod_sets[0], name="trainer")
    ev = replace(base.pod_sets[0], name="eval", request=replace(base.pod_sets[0].request, gpus=4))
    mixed = replace(base, pod_sets=(trainer, ev))
    a = TenantQueue("a", None, ((F, FlavorQuota(8)), (A100, FlavorQuota(8))))
    r = two_flavor_cycle([], [mixed], Tenancy(tenants=(a,)))
    assert r.started == ("mixed",)
    nodes = {b.pod_set: b.node for b in r.bindings}
    assert nodes["trainer"] in (0, 1) and nodes["eval"] == 2


@pytest.mark.parametrize("team2_weight, expected", [
    (1.0, [("y2", "InCohortFairSharing")]),
    (4.0, []),
])
def test_fair_sharing_preemption_compares_teams_at_their_common_ancestor_with_cohort_weights(
        team2_weight, expected):
    """Fair sharing, LessThanInitialShare only; x reclaimWithinCohort Any (without it no other
    queue's workload is a candidate). org > {team1 > x, team2 > y, team3 > z}; nominal
    x 8, y 8, z 16 (idle, lends all); 4 nodes, all used: x runs x0 (8), y runs y0, y1, y2 (8 each,
    y2 newest), borrowing 16. x-w (8 GPUs) would make x borrow 8. At org, the common ancestor:
    team1 with x-w: 16 − 8 = 8 of org's lendable 32 → 250; team2: 24 − 8 = 16 of 32 → 500 ÷
    weight(team2). Weight 1: 250 < 500, y2 is preempted. Weight 4: 500 / 4 = 125; 250 < 125 is
    false, nobody is. (Compared queue to queue inside their own cohorts, x's 1000 < y's 2000
    would preempt whatever team2's weight.)"""
    t = Tenancy(tenants=(TenantQueue("x", "team1", ((F, FlavorQuota(8)),),
                                     kueue=KueueQueuePolicy(reclaim_within_cohort="Any")),
                         TenantQueue("y", "team2", ((F, FlavorQuota(8)),)),
                         TenantQueue("z", "team3", ((F, FlavorQuota(16)),))),
                cohorts=(Cohort("org"), Cohort("team1", "org"), Cohort("team2", "org", weight=team2_weight),
                         Cohort("team3", "org")),
                fair_sharing=True, fair_sharing_strategies=("LessThanInitialShare",))
    run = [on(w("x0", "x", 8), 0)] + [on(w(f"y{i}", "y", 8), i + 1, start=NOW - 1_000 + 100 * i)
                                      for i in range(3)]
    r = cycle(run, [w("x-w", "x", 8)], t, nodes=4)
    assert preempted(r) == expected
