"""Who may be a victim, what the beneficiary is told, and what each beneficiary leaves the next.

Running sets are built by hand on 8-GPU nodes at t = 10,000 (jobs started at t = 10,000 − age);
tenants share cohort ``c``. Every expected victim is worked out in the test's docstring.
"""

from __future__ import annotations

from dataclasses import replace

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Cohort, FlavorQuota, PriorityClass, Tenancy, TenantQueue
from gpufleet.policies.gang import GangBestFit
from gpufleet.policies.preemption import TenancyPreemptor
from gpufleet.policies.quota import QuotaAdmitter, with_flavor
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job

H, A = "H100-80GB", "A100-80GB"
NOW = 10_000.0


def tenancy(grace: float = 0.0, classes=(), **quotas) -> Tenancy:
    """``a=16`` gives tenant a 16 H100 GPUs; ``a=((H, 8), (A, 8))`` gives it several flavours."""
    def qs(q):
        return ((H, FlavorQuota(q)),) if isinstance(q, int) else tuple((f, FlavorQuota(n)) for f, n in q)
    return Tenancy(tenants=tuple(TenantQueue(t, "c", qs(q)) for t, q in quotas.items()),
                   cohorts=(Cohort("c"),), grace_s=grace, priority_classes=tuple(classes))


def running(name: str, tenant: str, gpus: int, node: int, age: float, flavor: str = H, priority: int = 0,
            evict_at: float | None = None) -> RunningJob:
    """One pod of ``gpus`` on ``node`` since NOW − ``age``, no checkpoints: evicting it loses
    gpus × age GPU-seconds. ``evict_at`` puts it under an eviction notice ending then."""
    j = with_flavor(replace(job("x").tenant(tenant).gpus(gpus).priority(priority).runs(90_000).build(),
                            id=name), flavor)
    ps = j.pod_sets[0]
    return RunningJob(j, NOW - age, (PodBinding(j.id, ps.name, 0, node, ps.request),),
                      evicting=evict_at is not None, evict_at=evict_at)


def cycle(run: list[RunningJob], pending: list[Job], ten: Tenancy, flt=None,
          policy: str | Profile = "tenancy"):
    table = NodeTable.from_fleet(flt if flt is not None else fleet().leaves(1, nodes=4).build())
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    prof = profile(policy) if isinstance(policy, str) else policy
    return run_cycle(CycleInput(NOW, table, [PendingJob(j) for j in pending], prof,
                                running=run, tenancy=ten))


def victims(r) -> list[tuple[str, str]]:
    return [(p.job, p.for_job) for p in r.preemptions]


def test_the_beneficiary_is_told_whom_it_preempts_why_and_when_it_can_start():
    """Grace 30 s. b (nominal 16) runs 4 × 8 on 4 nodes, ages 400/300/200/100 s: b3 loses the least
    (8 × 100). a (nominal 16) asks 8: one reclaim of b3; a1 waits until NOW + 30 = 10,030."""
    run = [running(f"b{i}", "b", 8, i, 400 - 100 * i) for i in range(4)]
    r = cycle(run, [job("a1").tenant("a").gpus(8).build()], tenancy(grace=30.0, a=16, b=16))
    (p,) = r.preemptions
    assert (p.job, p.for_job, p.grace_s) == ("b3", "a1", 30.0)
    assert p.reason == "reclaim: a is within its nominal H100-80GB quota"
    st = r.statuses["a1"]
    assert st.code is StatusCode.WAIT and st.estimated_start == NOW + 30.0
    assert st.reasons[-1] == ("preempting b3 (reclaim: a is within its nominal H100-80GB quota); "
                              "starts once they are evicted")


def test_priority_preemption_within_a_tenant_says_so():
    """One node: a (nominal 8, alone) runs a-low (8 GPUs, priority 0). a-hi (priority 10) exceeds
    nominal (8 + 8 > 8) and evicts a-low: a priority preemption, not a reclaim."""
    r = cycle([running("a-low", "a", 8, 0, 100)], [job("a-hi").tenant("a").gpus(8).priority(10).build()],
              tenancy(a=8), flt=fleet().leaves(1, nodes=1).build())
    assert victims(r) == [("a-low", "a-hi")]
    assert r.preemptions[0].reason == "priority 10 within tenant a"


def test_equal_priority_work_of_the_same_tenant_is_never_a_victim():
    """As above but the pending job has priority 0 too: 0 is not lower than 0, nothing is evicted."""
    r = cycle([running("a-low", "a", 8, 0, 100)], [job("a-2").tenant("a").gpus(8).build()],
              tenancy(a=8), flt=fleet().leaves(1, nodes=1).build())
    assert r.preemptions == ()


def test_a_non_preemptible_class_is_honoured_within_the_budget_and_not_beyond():
    """Class ``critical`` (priority 5) is not preemptible. 2 nodes; a (nominal 12) runs a-old
    (4 GPUs, priority 10, started first) on node 0 and a-crit (8 GPUs, priority 5) on node 1.
    a-hi (4 GPUs, priority 10) would put a at 12 + 4 > 12, so 4 GPUs of a's lower work must go.
    No budget: every raised class is honoured, a-crit is protected and not preemptible, a-old is
    not lower than 10: no victim. Budget 8: a-old claims 4 of it, a-crit would reach 4 + 8 = 12
    > 8 so its class is not honoured (effective priority 0), a-hi fits the budget (4 + 4 = 8) and
    keeps priority 10: a-crit is the victim."""
    classes = (PriorityClass("normal", 0), PriorityClass("critical", 5, preemptible=False),
               PriorityClass("high", 10))
    run = [running("a-old", "a", 4, 0, 900, priority=10),
           running("a-crit", "a", 8, 1, 100, priority=5)]
    hi = job("a-hi").tenant("a").gpus(4).priority(10).build()
    two = fleet().leaves(1, nodes=2).build()
    honoured = tenancy(classes=classes, a=12)
    assert cycle(run, [hi], honoured, flt=two).preemptions == ()
    budget = replace(honoured, tenants=(replace(honoured.tenants[0], priority_budget_gpus=8),))
    assert victims(cycle(run, [hi], budget, flt=two)) == [("a-crit", "a-hi")]


def test_only_borrowers_of_the_beneficiarys_flavour_are_reclaimed():
    """Node 0 is A100, nodes 1-2 H100. b (nominal 0 of each) borrows everything: b-a100 on node 0
    (100 s old, the cheapest) and b-h1, b-h2 on the H100 nodes (5,000 s, 9,000 s). a (H100
    nominal 16) asks 8 H100 GPUs: the A100 job is not a candidate however cheap; b-h1 goes."""
    flt = fleet().leaves(1, nodes=1, gpu=A).leaves(1, nodes=2, gpu=H).build()
    run = [running("b-a100", "b", 8, 0, 100, flavor=A), running("b-h1", "b", 8, 1, 5_000),
           running("b-h2", "b", 8, 2, 9_000)]
    r = cycle(run, [job("a1").tenant("a").gpus(8).models(H).build()],
              tenancy(a=((H, 16), (A, 0)), b=((H, 0), (A, 0))), flt=flt)
    assert victims(r) == [("b-h1", "a1")]


def test_a_job_started_this_cycle_counts_against_its_tenants_guarantee():
    """4 nodes; a nominal 16, b nominal 16. b runs b0-b2 (24, 8 borrowed) on nodes 0-2; node 3 is
    free (the cohort can still lend 32 − 24 = 8). a1 (8) starts on node 3 this cycle. a2 (2 × 8)
    would put a at 8 + 16 = 24 > 16: no reclaim for it. Without a1, a2 is within the guarantee
    (0 + 16 ≤ 16) and, needing 16 GPUs with 8 to lend, reclaims one of b's jobs, the one losing
    the least (b0, 8 × 100 GPU-s; b at 24 − 8 = 16 is back within nominal)."""
    run = [running(f"b{i}", "b", 8, i, 100 * (i + 1)) for i in range(3)]
    a1 = job("a1").tenant("a").gpus(8).build()
    a2 = job("a2").tenant("a").gpus(8).gang(2).at(1).build()
    r = cycle(run, [a1, a2], tenancy(a=16, b=16))
    assert r.started == ("a1",) and r.preemptions == ()
    r = cycle(run, [a2], tenancy(a=16, b=16))
    assert victims(r) == [("b0", "a2")]


def test_the_first_beneficiary_spends_the_guarantee_the_next_would_need():
    """4 nodes; a nominal 8, b nominal 24, b runs 4 × 8 (8 borrowed). a1 and a2 ask 8 each: a1 is
    within a's guarantee (0 + 8 ≤ 8) and reclaims one of b's jobs; a2 is refused at admission
    (8 + 8 > 8) and, once a1 is charged, reclaim for it is not justified: one notice, not two."""
    run = [running(f"b{i}", "b", 8, i, 100 * (i + 1)) for i in range(4)]
    r = cycle(run, [job("a1").tenant("a").gpus(8).build(), job("a2").tenant("a").gpus(8).at(1).build()],
              tenancy(a=8, b=24))
    assert victims(r) == [("b0", "a1")]


def test_room_partly_free_and_partly_under_notice_is_labelled_only_when_the_notice_is_needed():
    """Node 0: 4 GPUs free and b-go (4 GPUs) under notice until 10,020; nodes 1-3 busy with b's
    borrowed work. a1 (4 GPUs) fits the free half: it starts now, nobody is preempted. a2
    (8 GPUs) needs b-go's GPUs too: it waits for them, labelled, estimated at 10,020, and no
    new notice is sent for it."""
    run = [running("b-go", "b", 4, 0, 100, evict_at=NOW + 20)]
    run += [running(f"b{i}", "b", 8, i, 100 * i) for i in (1, 2, 3)]
    ten = tenancy(grace=20.0, a=16, b=16)
    r = cycle(run, [job("a1").tenant("a").gpus(4).build()], ten)
    assert r.started == ("a1",) and r.preemptions == ()
    r = cycle(run, [job("a2").tenant("a").gpus(8).build()], ten)
    assert r.preemptions == () and r.started == ()
    st = r.statuses["a2"]
    assert st.reasons[-1] == "waiting for capacity already being evicted" and st.estimated_start == NOW + 20


def test_a_job_refused_for_an_unknown_tenant_gets_no_victims():
    """Only quota refusals (nominal, borrowing limit, cohort capacity) make a refused job a
    beneficiary: z has no queue, so b's borrowed work is left alone."""
    run = [running(f"b{i}", "b", 8, i, 100) for i in range(4)]
    r = cycle(run, [job("z1").tenant("z").gpus(8).build()], tenancy(a=16, b=16))
    assert r.preemptions == () and r.statuses["z1"].reasons[0] == "UnknownTenant"


def test_a_job_waiting_on_two_notices_is_estimated_to_start_when_the_later_one_ends():
    """Node 0 holds b-go1 (4 GPUs, evicted at 10,020) and b-go2 (4 GPUs, at 10,025); nodes 1-3
    are busy. a1 (8 GPUs) needs both halves: estimated start max(10,020, 10,025) = 10,025."""
    run = [running("b-go1", "b", 4, 0, 100, evict_at=NOW + 20),
           running("b-go2", "b", 4, 0, 100, evict_at=NOW + 25)]
    run += [running(f"b{i}", "b", 8, i, 100 * i) for i in (1, 2, 3)]
    r = cycle(run, [job("a1").tenant("a").gpus(8).build()], tenancy(grace=30.0, a=16, b=16))
    assert r.preemptions == ()
    assert r.statuses["a1"].estimated_start == NOW + 25


def test_among_equally_costly_victims_the_lower_priority_one_goes_first():
    """b (nominal 0) borrows 2 nodes: b-hi (priority 5) and b-lo (priority 0), both 8 GPUs started
    1,000 s ago, so both lose 8,000 GPU-s. a (nominal 16, all lent to b) asks 8: checkpoint-aware ties on work
    lost and takes the lower priority, b-lo; the naive rule looks at priority first: b-lo too."""
    run = [running("b-hi", "b", 8, 0, 1_000, priority=5), running("b-lo", "b", 8, 1, 1_000)]
    two = fleet().leaves(1, nodes=2).build()
    for policy in ("tenancy", "tenancy-naive-victims"):
        r = cycle(run, [job("a1").tenant("a").gpus(8).build()], tenancy(a=16, b=0), flt=two, policy=policy)
        assert victims(r) == [("b-lo", "a1")], policy


def test_the_naive_rule_evicts_the_youngest_of_equal_priority_and_ties_go_by_id():
    """b (nominal 0) borrows 3 nodes at priority 0: b-x started 500 s ago, b-z and b-y 100 s
    ago, all of a's nominal 24. a asks 8: one victim. The naive rule takes the most recently
    started, then the smallest id: b-y."""
    run = [running("b-x", "b", 8, 0, 500), running("b-z", "b", 8, 1, 100), running("b-y", "b", 8, 2, 100)]
    r = cycle(run, [job("a1").tenant("a").gpus(8).build()], tenancy(a=24, b=0),
              flt=fleet().leaves(1, nodes=3).build(), policy="tenancy-naive-victims")
    assert victims(r) == [("b-y", "a1")]


def test_work_lost_that_differs_only_by_float_noise_is_a_tie_decided_by_priority():
    """b (nominal 0) borrows 2 nodes: b-hi (priority 5) started 1,000 s ago, b-lo (priority 0)
    1,000.00000001 s ago. Work lost 8 × 1,000 = 8,000 and 8 × 1,000.00000001 = 8,000.00000008
    GPU-s: equal to a millionth of a GPU-second, a tie, so the lower priority goes: b-lo. (a's
    nominal is 16, all lent to b; a asks 8: one victim.)"""
    run = [running("b-hi", "b", 8, 0, 1_000, priority=5), running("b-lo", "b", 8, 1, 1_000.00000001)]
    r = cycle(run, [job("a1").tenant("a").gpus(8).build()], tenancy(a=16, b=0),
              flt=fleet().leaves(1, nodes=2).build())
    assert victims(r) == [("b-lo", "a1")]


def test_among_equal_losses_and_priorities_the_most_recently_started_goes_first():
    """b (nominal 0) borrows 2 nodes with jobs checkpointing every 600 s: b-new started 1,000 s ago
    (last checkpoint at 600: loses 8 × 400), b-old 1,600 s ago (checkpoint at 1,200: 8 × 400).
    Equal work lost, equal priority: the most recently started, b-new, goes. (a's nominal is 16,
    all lent to b; a asks 8: one victim.)"""
    ck = job("x").tenant("b").gpus(8).runs(90_000).checkpoints(600)
    run = []
    for name, node, age in (("b-old", 0, 1_600.0), ("b-new", 1, 1_000.0)):
        j = with_flavor(replace(ck.build(), id=name), H)
        run.append(RunningJob(j, NOW - age, (PodBinding(j.id, "worker", 0, node, j.pod_sets[0].request),)))
    r = cycle(run, [job("a1").tenant("a").gpus(8).build()], tenancy(a=16, b=0),
              flt=fleet().leaves(1, nodes=2).build())
    assert victims(r) == [("b-new", "a1")]


def test_the_preemptor_prices_victims_by_work_lost_unless_told_otherwise_and_signs_its_statuses():
    """A TenancyPreemptor built without a rule uses checkpoint-aware victims; the statuses it
    writes name it "preempt-checkpoint-aware" (and "preempt-naive" under the naive rule)."""
    admitter = QuotaAdmitter()
    assert TenancyPreemptor(admitter).rule == "checkpoint-aware"
    prof = Profile("hand-built", placer=GangBestFit(), admitter=admitter,
                   preemptor=TenancyPreemptor(admitter))
    run = [running(f"b{i}", "b", 8, i, 400 - 100 * i) for i in range(4)]
    r = cycle(run, [job("a1").tenant("a").gpus(8).build()], tenancy(a=16, b=16), policy=prof)
    assert victims(r) == [("b3", "a1")] and r.statuses["a1"].policy == "preempt-checkpoint-aware"
    r = cycle(run, [job("a1").tenant("a").gpus(8).build()], tenancy(a=16, b=16),
              policy="tenancy-naive-victims")
    assert r.statuses["a1"].policy == "preempt-naive"


def test_hopeless_beneficiaries_of_one_shape_do_not_stop_a_later_tenants_preemption():
    """2 nodes; a (nominal 16) runs a-low (8 GPUs, 100 s old) and a-old (8 GPUs, 5,000 s), both
    priority 0; c (nominal 0) shares the cohort. c1 and c2 (8 GPUs each) would borrow, but the
    pool (a's 16) is in use; a-hi (8, priority 10) exceeds a's nominal. Fair share walks c (0
    GPUs held, then 8) before a (16): c1 finds no victim (nothing of c's runs, a is within its
    quota), c2 of the same shape is skipped, and a-hi behind them still evicts the cheaper of
    its own, a-low."""
    pending = [job(f"c{i}").tenant("c").gpus(8).build() for i in (1, 2)]
    pending.append(job("a-hi").tenant("a").gpus(8).priority(10).at(5).build())
    run = [running("a-low", "a", 8, 0, 100), running("a-old", "a", 8, 1, 5_000)]
    r = cycle(run, pending, tenancy(a=16, c=0), flt=fleet().leaves(1, nodes=2).build())
    assert victims(r) == [("a-low", "a-hi")]


def test_a_beneficiary_that_fits_on_room_under_notice_does_not_stop_the_next_from_reclaiming():
    """Node 0: b-go (8 GPUs) under notice; nodes 1-3: b's borrowed jobs (b at 24 + 8 under notice,
    nominal 16). a1 (8) fits on b-go's room and waits for it; a2 (8, a at 16 ≤ 16) needs a
    reclaim of its own: the cheapest of b's, b3."""
    run = [running("b-go", "b", 8, 0, 50, evict_at=NOW + 20)]
    run += [running(f"b{i}", "b", 8, i, 400 - 100 * i) for i in (1, 2, 3)]
    r = cycle(run, [job("a1").tenant("a").gpus(8).build(), job("a2").tenant("a").gpus(8).at(1).build()],
              tenancy(grace=20.0, a=16, b=16))
    assert victims(r) == [("b3", "a2")]
    assert r.statuses["a1"].reasons[-1] == "waiting for capacity already being evicted"


def test_a_job_under_notice_no_longer_counts_as_its_tenants_borrowing():
    """2 nodes; b (nominal 8) runs b-go (under notice) on node 0 and b1 on node 1; a (nominal 16)
    asks a1 and a2 (8 each). a1 takes b-go's room. Without b-go, b holds 8 = its nominal: b1 is
    not borrowing and is not reclaimed for a2."""
    run = [running("b-go", "b", 8, 0, 50, evict_at=NOW + 20), running("b1", "b", 8, 1, 100)]
    r = cycle(run, [job("a1").tenant("a").gpus(8).build(), job("a2").tenant("a").gpus(8).at(1).build()],
              tenancy(grace=20.0, a=16, b=8), flt=fleet().leaves(1, nodes=2).build())
    assert r.preemptions == ()


def test_room_freed_by_two_notices_on_one_node_is_counted_whole():
    """One node: b-go1 and b-go2 (2 GPUs each) under notice, b-stay holds the other 4. a1 asks
    2 GPUs: none is free now; the 4 under notice are, soon: a1 is told it waits for them."""
    run = [running("b-go1", "b", 2, 0, 50, evict_at=NOW + 20),
           running("b-go2", "b", 2, 0, 50, evict_at=NOW + 20), running("b-stay", "b", 4, 0, 100)]
    r = cycle(run, [job("a1").tenant("a").gpus(2).build()], tenancy(grace=20.0, a=8, b=0),
              flt=fleet().leaves(1, nodes=1).build())
    assert r.preemptions == ()
    assert r.statuses["a1"].reasons[-1] == "waiting for capacity already being evicted"


def test_each_reclaim_lowers_the_borrowers_usage_for_the_next_beneficiary():
    """4 nodes; b (nominal 16) runs b0-b2 (24: 8 borrowed), cheap (100-300 s old); c (nominal 0)
    runs c0 (8 borrowed, 9,000 s old). a1 and a2 (8 each, a nominal 16) are both within a's
    guarantee. a1 reclaims b0 (b back to 16 = nominal); a2 must then reclaim from c: c0."""
    run = [running(f"b{i}", "b", 8, i, 100 * (i + 1)) for i in range(3)]
    run.append(running("c0", "c", 8, 3, 9_000))
    r = cycle(run, [job("a1").tenant("a").gpus(8).build(), job("a2").tenant("a").gpus(8).at(1).build()],
              tenancy(a=16, b=16, c=0))
    assert victims(r) == [("b0", "a1"), ("c0", "a2")]


def test_a_beneficiary_with_two_victims_is_told_both():
    """One node: a (nominal 2) runs a-low (1 GPU); b (nominal 6) runs seven 1-GPU jobs, b0 the
    youngest. a-hi (2 GPUs, priority 10) needs a-low and one of b's (see the guarantee tests)."""
    run = [running("a-low", "a", 1, 0, 100)]
    run += [running(f"b{i}", "b", 1, 0, 1_000 * (i + 1)) for i in range(7)]
    r = cycle(run, [job("a-hi").tenant("a").gpus(2).priority(10).build()], tenancy(a=2, b=6),
              flt=fleet().leaves(1, nodes=1).build())
    assert r.statuses["a-hi"].reasons[-1] == (
        "preempting a-low, b0 (reclaim: a is within its nominal H100-80GB quota); "
        "starts once they are evicted")


def test_own_work_is_not_evicted_when_that_would_not_bring_the_job_within_its_quota():
    """2 nodes; a (nominal 8, no one to borrow from) runs a-low (4 GPUs, priority 0) and a-eq
    (4 GPUs, priority 10) on node 0; node 1 is free. a-hi (8, priority 10) exceeds the nominal:
    8 + 8 > 8. Only a-low is lower than a-hi, and without it a would hold 4 + 8 = 12 > 8: still
    refused, so a-low is not evicted for nothing (though a-hi would fit on node 1)."""
    run = [running("a-low", "a", 4, 0, 100), running("a-eq", "a", 4, 0, 100, priority=10)]
    r = cycle(run, [job("a-hi").tenant("a").gpus(8).priority(10).build()], tenancy(a=8),
              flt=fleet().leaves(1, nodes=2).build())
    assert r.preemptions == ()


def test_an_admitted_borrower_evicts_only_the_own_work_it_needs_room_for():
    """3 nodes, full; pool 8 + 16 + 16 = 40. a (nominal 8) runs a-new (100 s) and a-old (5,000 s),
    8 GPUs each at priority 0; b runs b1 (8, within its 16); c (16) is idle. a-hi (8, priority
    10) is admitted as a borrower (40 − 24 = 16 ≥ 8) but no node is free. Evicting a-new makes
    room: a ends at 8 + 8 = 16, borrowing, which is allowed for an admitted job. One notice."""
    run = [running("a-new", "a", 8, 0, 100), running("a-old", "a", 8, 1, 5_000),
           running("b1", "b", 8, 2, 100)]
    r = cycle(run, [job("a-hi").tenant("a").gpus(8).priority(10).build()], tenancy(a=8, b=16, c=16),
              flt=fleet().leaves(1, nodes=3).build())
    assert victims(r) == [("a-new", "a-hi")]


def test_the_own_work_a_job_needs_gone_is_summed_over_several_small_jobs_before_reclaiming():
    """One node of 8. a (nominal 5) runs a-l1 and a-l2 (1 GPU each, priority 0) and a-eq (2 GPUs,
    priority 10): 4 GPUs. b (nominal 3) runs b0-b3 (1 GPU each, b0 the youngest): 1 borrowed.
    a-hi (3 GPUs, priority 10) would put a at 4 + 3 = 7 > 5: 7 − 5 = 2 GPUs of a's lower work
    must go, a-l1 + a-l2 (1 + 1 = 2). They free 2 GPUs of the 3 it needs; the third is reclaimed
    from b (4 > 3): a-l1, a-l2 and b0."""
    run = [running("a-l1", "a", 1, 0, 100), running("a-l2", "a", 1, 0, 200),
           running("a-eq", "a", 2, 0, 300, priority=10)]
    run += [running(f"b{i}", "b", 1, 0, 1_000 * (i + 1)) for i in range(4)]
    r = cycle(run, [job("a-hi").tenant("a").gpus(3).priority(10).build()], tenancy(a=5, b=3),
              flt=fleet().leaves(1, nodes=1).build())
    assert sorted(p.job for p in r.preemptions) == ["a-l1", "a-l2", "b0"]


def test_victims_that_free_room_on_the_wrong_nodes_are_not_the_end_of_the_search_and_are_reprieved():
    """2 nodes, full; a (nominal 12, all lent to b) asks 8 GPUs on one node. b (nominal 0) borrows three 4-GPU
    jobs: v1 (100 s old) and v3 (900 s) on node 0, v2 (500 s) on node 1 beside c's c1 (4 GPUs,
    within c's 4). Cheapest first: v1 (4 free < 8), v1 + v2 (8 free, but 4 on each node: no
    fit), v1 + v2 + v3 (node 0 whole: fits). Reprieve, most expensive first: without v3 no fit;
    without v2 it still fits on node 0, so v2 stays running; v1 is needed. Notices: v1 and v3."""
    run = [running("v1", "b", 4, 0, 100), running("v3", "b", 4, 0, 900), running("v2", "b", 4, 1, 500),
           running("c1", "c", 4, 1, 50)]
    r = cycle(run, [job("a1").tenant("a").gpus(8).build()], tenancy(a=12, b=0, c=4),
              flt=fleet().leaves(1, nodes=2).build())
    assert sorted(p.job for p in r.preemptions) == ["v1", "v3"]


def easy_cycle_with_notice(notice_gpus: int, held: list[Job]):
    """tenancy-easy, 2 nodes: a (nominal 32) runs a-run on node 0 until 10,500; on node 1 b-go
    (``notice_gpus`` GPUs, within b's nominal 8, so it takes nothing from a's quota) is under
    notice until 10,020 and the rest of node 1 is free. a-big
    (2 × 8, 3,000 s) is reserved for 10,500; the ``held`` jobs run 5,000 s, past 10,500, so
    backfill does not start them whatever fits now."""
    run = [running("a-run", "a", 8, 0, 500), running("b-go", "b", notice_gpus, 1, 100, evict_at=NOW + 20)]
    run[0] = replace(run[0], job=replace(run[0].job, run_time=1_000.0))
    big = job("a-big").tenant("a").gpus(8).gang(2).runs(3_000).build()
    return cycle(run, [big, *held], tenancy(grace=20.0, a=32, b=8), flt=fleet().leaves(1, nodes=2).build(),
                 policy="tenancy-easy")


def evicted_label(r, job_id: str) -> bool:
    return "waiting for capacity already being evicted" in r.statuses[job_id].reasons


def test_a_held_job_that_fits_the_free_part_of_a_node_is_not_said_to_wait_for_evictions():
    """Node 1: b-go holds 4 GPUs under notice, 4 are free. a-small (4 GPUs) fits the 4 free ones
    (8 free after the notice − 4 under notice = 4 ≥ 4): it claims nothing under notice."""
    r = easy_cycle_with_notice(4, [job("a-small").tenant("a").gpus(4).runs(5_000).at(1).build()])
    assert r.preemptions == () and not evicted_label(r, "a-small")


def test_a_job_that_needs_a_single_gpu_under_notice_waits_for_it():
    """One node: b-go (1 GPU) under notice, b-stay 7 GPUs. a1 (1 GPU) can only have b-go's GPU."""
    run = [running("b-go", "b", 1, 0, 50, evict_at=NOW + 20), running("b-stay", "b", 7, 0, 100)]
    r = cycle(run, [job("a1").tenant("a").gpus(1).build()], tenancy(grace=20.0, a=8, b=8),
              flt=fleet().leaves(1, nodes=1).build())
    assert r.preemptions == () and evicted_label(r, "a1")


def test_gpus_under_notice_claimed_by_one_job_leave_only_the_rest_to_the_next():
    """Node 1: b-go holds 6 GPUs under notice, 2 are free. h1 (4 GPUs) takes the 2 free and 2 of
    b-go's: 6 − 2 = 4 under notice are left, and those are all that is free (8 − 4 = 4). h2 (2
    GPUs) can only have GPUs under notice: both are told they wait for the eviction."""
    held = [job("h1").tenant("a").gpus(4).runs(5_000).at(1).build(),
            job("h2").tenant("a").gpus(2).runs(5_000).at(2).build()]
    r = easy_cycle_with_notice(6, held)
    assert evicted_label(r, "h1") and evicted_label(r, "h2")


# ---- own lower-priority work goes before anyone else's (h-core: mutation survivors) ----

def test_the_reprieve_does_not_keep_own_work_that_would_leave_the_reclaim_unjustified():
    """Two nodes, a and b nominal 8 each. Node 0: a-low (a, 4 GPUs, priority 0, 50 s old) and b3
    (b, 4 GPUs, 100 s); node 1: b2 (b, 8 GPUs, 10 s). b uses 12 > 8: a borrower. a-hi (a, 8 GPUs,
    priority 10): a uses 4, so 4 + 8 − 8 = 4 GPUs of a's own work must go first (a-low), then b
    is reclaimed cheapest first: b2 loses 8 × 10 = 80 GPU-s, b3 4 × 100 = 400. {a-low, b2} frees
    node 1 whole, a-hi fits there. The reprieve then tries to keep a-low: a-hi would still fit on
    node 1, but a would use 4 + 8 = 12 > 8 — above its nominal quota, so it could not reclaim
    from b. a-low is evicted with b2."""
    run = [running("a-low", "a", 4, 0, 50), running("b3", "b", 4, 0, 100), running("b2", "b", 8, 1, 10)]
    r = cycle(run, [job("a-hi").tenant("a").gpus(8).priority(10).build()], tenancy(a=8, b=8),
              fleet().leaves(1, nodes=2).build())
    assert sorted(victims(r)) == [("a-low", "a-hi"), ("b2", "a-hi")]


def test_own_lower_priority_work_is_a_victim_when_the_quota_needs_nothing_freed():
    """Two full nodes, a nominal 16, b nominal 8. Node 0: a1 (a, 4 GPUs, 100 s) and bx (b, 4);
    node 1: a2 (a, 4 GPUs, 200 s) and by (b, 4). b uses 8 ≤ 8: nothing to reclaim. a-hi (a,
    4 GPUs, priority 10): a uses 8 + 4 = 12 ≤ 16, so no own work must go for the quota's sake
    (8 + 4 − 16 < 0); a-hi still needs room, and its own lower-priority jobs may give it: a1
    loses 4 × 100 = 400 GPU-s, a2 800, so a1 alone is evicted and a-hi takes its 4 GPUs."""
    run = [running("a1", "a", 4, 0, 100), running("bx", "b", 4, 0, 50),
           running("a2", "a", 4, 1, 200), running("by", "b", 4, 1, 50)]
    r = cycle(run, [job("a-hi").tenant("a").gpus(4).priority(10).build()], tenancy(a=16, b=8),
              fleet().leaves(1, nodes=2).build())
    assert victims(r) == [("a1", "a-hi")]
