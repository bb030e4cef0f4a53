"""Tenancy preemption: reclaim, priority within a tenant, checkpoint-aware victims, whole gangs."""

from dataclasses import replace

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.preemption import work_lost_gpu_s
from gpufleet.policies.quota import with_flavor
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.testing.builders import fleet, job

F = "H100-80GB"


def ten(grace=0.0):
    q = ((F, FlavorQuota(16)),)
    return Tenancy(tenants=(TenantQueue("a", "c", q), TenantQueue("b", "c", q)), cohorts=(Cohort("c"),),
                   grace_s=grace)


def on_nodes(j, nodes, start=0.0, evicting=False):
    jj = with_flavor(j, F)
    ps = jj.pod_sets[0]
    binds = tuple(PodBinding(j.id, ps.name, i, n, ps.request) for i, n in enumerate(nodes))
    return RunningJob(j, start, binds, evicting=evicting)


def cycle(running, pending, policy="tenancy", now=10_000.0, grace=0.0):
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=4).build())
    for rj in running:
        for b in rj.bindings:
            table.take(b.node, b.request)
    return run_cycle(CycleInput(now, table, [PendingJob(j) for j in pending], profile(policy),
                                running=running, tenancy=ten(grace)))


def borrowers():
    """b holds all 4 nodes (16 nominal + 16 borrowed). b1 checkpointed 100 s ago, b3 3,500 s
    ago; b2 and b4 started most recently but checkpoint often."""
    ck = job("x").tenant("b").gpus(8)
    return [
        on_nodes(_named(ck.runs(90_000).checkpoints(3600, restart_s=60).build(), "b1"), [0], 6_500),
        on_nodes(_named(ck.runs(90_000).checkpoints(600, restart_s=60).build(), "b2"), [1], 9_000),
        on_nodes(_named(ck.runs(90_000).checkpoints(3600, restart_s=60).build(), "b3"), [2], 2_900),
        on_nodes(_named(ck.runs(90_000).checkpoints(600, restart_s=60).build(), "b4"), [3], 9_500),
    ]


def _named(j, name):
    return replace(j, id=name)


def test_a_tenant_within_its_guarantee_reclaims_from_the_borrower_losing_the_least_work():
    """a asks 8 GPUs (within its 16). Work lost now (t = 10,000, no grace), GPUs × (P − S + R):
    b1: P = 3,500, S = 0 (interval 3,600)   → 8 × (3,500 + 60) = 28,480
    b2: P = 1,000, S = 600                  → 8 × (400 + 60)   =  3,680
    b3: P = 7,100, S = 3,600                → 8 × (3,500 + 60) = 28,480
    b4: P =   500, S = 0                    → 8 × (500 + 60)   =  4,480
    checkpoint-aware evicts b2; the naive rule evicts the youngest, b4."""
    run = borrowers()
    assert [round(work_lost_gpu_s(rj, 10_000.0, 0.0)) for rj in run] == [28_480, 3_680, 28_480, 4_480]
    a = job("a1").tenant("a").gpus(8).build()
    smart = cycle(run, [a])
    naive = cycle(run, [a], policy="tenancy-naive-victims")
    assert [(p.job, p.for_job) for p in smart.preemptions] == [("b2", "a1")]
    assert [p.job for p in naive.preemptions] == ["b4"]
    assert smart.started == () and smart.bindings == ()


def test_the_simulator_charges_the_victim_exactly_the_work_the_preemptor_priced():
    """2 nodes; a and b nominal 8 each. b runs b1 (checkpoint every 600 s) and b2 (every
    3,600 s), both 8 GPUs from t = 0 for 10,000 s, checkpoint cost 60 s (> the 30 s grace, so no
    fresh checkpoint on notice), restart 30 s. a asks 8 GPUs for 600 s at t = 1,000.
    Evicted at 1,030: b1 progress 1,030, saved ⌊1,030 / 600⌋ × 600 = 600 → 8 × (430 + 30) = 3,680
    GPU-s; b2 saved 0 → 8 × (1,030 + 30) = 8,480. b1 is the victim, and the run loses 3,680 GPU-s.
    a starts at 1,030 and ends at 1,630; b1 restarts then and needs 30 + (10,000 − 600) s more:
    it finishes at 1,630 + 9,430 = 11,060."""
    b = [job(f"b{i}").tenant("b").gpus(8).runs(10_000).checkpoints(iv, 60, 30).build()
         for i, iv in ((1, 600), (2, 3600))]
    a = job("a1").tenant("a").gpus(8).at(1_000).runs(600).build()
    q = ((F, FlavorQuota(8)),)
    tn = Tenancy(tenants=(TenantQueue("a", "c", q), TenantQueue("b", "c", q)), cohorts=(Cohort("c"),),
                 grace_s=30.0)
    r = simulate(fleet().leaves(1, nodes=2).build(), [*b, a], profile("tenancy"), tenancy=tn)
    assert [jid for _, kind, jid, _ in r.recorder.log if kind == "preempt"] == ["b1"]
    assert r.lost_gpu_s == 3_680.0
    assert r.starts["a1"] == 1_030.0 and r.finishes["b1"] == 11_060.0


def test_a_borrower_is_never_preempted_for_another_borrower():
    run = borrowers()[:2] + [on_nodes(_named(job("x").tenant("a").gpus(8).build(), "a0"), [2]),
                             on_nodes(_named(job("x").tenant("a").gpus(8).build(), "a9"), [3])]
    r = cycle(run, [job("a1").tenant("a").gpus(8).build()])
    assert r.preemptions == ()


def test_higher_priority_preempts_lower_priority_within_the_tenant_only():
    run = [on_nodes(_named(job("x").tenant("a").gpus(8).build(), f"a{i}"), [i]) for i in range(2)]
    run += [on_nodes(_named(job("x").tenant("b").gpus(8).build(), f"b{i}"), [i + 2]) for i in range(2)]
    urgent = job("a-hi").tenant("a").gpus(8).priority(10).build()
    r = cycle(run, [urgent])
    assert len(r.preemptions) == 1 and r.preemptions[0].job.startswith("a")


def test_capacity_already_being_evicted_is_not_preempted_for_twice():
    run = borrowers()
    run[1] = RunningJob(run[1].job, run[1].start_time, run[1].bindings, evicting=True)
    r = cycle(run, [job("a1").tenant("a").gpus(8).build()])
    assert r.preemptions == ()
    assert "being evicted" in r.statuses["a1"].reasons[-1]


def test_no_preemption_for_a_job_that_would_still_not_fit():
    """a asks 24 GPUs, more than its nominal 16: reclaim serves only jobs within the guarantee, and
    a has no lower-priority job of its own to preempt, so nothing is preempted or bound."""
    r = cycle(borrowers(), [job("a1").tenant("a").gpus(8).gang(3).build()])
    assert r.preemptions == () and r.bindings == ()


def test_a_whole_gang_is_evicted_or_none_of_it():
    gang = on_nodes(_named(job("x").tenant("b").gpus(8).gang(2).build(), "bg"), [0, 1])
    rest = [on_nodes(_named(job("x").tenant("b").gpus(8).build(), f"b{i}"), [i]) for i in (2, 3)]
    r = cycle([gang, *rest], [job("a1").tenant("a").gpus(8).gang(2).build()])
    assert {p.job for p in r.preemptions} in ({"bg"}, {"b2", "b3"})


def test_a_guaranteed_job_waits_for_its_reclaimed_quota_rather_than_exceed_a_lending_limit():
    """48 GPUs (6 × 8). org ⊃ team1 = {a} (team1 lends at most 8), team2 = {b, c} (c lends at
    most 8 of its 16). c runs 2 × 16 GPUs (borrowing b's unused 16) and a runs 3 one-GPU jobs
    until t=600. b submits 16 GPUs at t=571: within b's nominal 16, so c's newest 16 are reclaimed
    (notice, 30 s grace: gone at t=601). At t=600 a's 3 GPUs free 16 GPUs physically, but starting
    b then would put team2 at 16 + 32 = 48 GPUs against its 32 of quota, 16 borrowed from team1
    which lends 8 at most. Kueue admits b only once the borrower is gone; so must we: b starts at
    t=601, not 600, and nothing else is evicted."""
    f = "H100-80GB"
    ten = Tenancy(
        tenants=(TenantQueue("a", "team1", ((f, FlavorQuota(16)),)),
                 TenantQueue("b", "team2", ((f, FlavorQuota(16, 0, None)),)),
                 TenantQueue("c", "team2", ((f, FlavorQuota(16, None, 8)),))),
        cohorts=(Cohort("org"), Cohort("team1", "org", ((f, FlavorQuota(0, None, 8)),)),
                 Cohort("team2", "org")), grace_s=30.0)
    jobs = [job(f"a{i}").tenant("a").gpus(1).at(0).runs(600).build() for i in range(3)]
    jobs += [job("c1").tenant("c").gpus(8).gang(2).at(0).runs(601).build(),
             job("c2").tenant("c").gpus(8).gang(2).at(0).runs(601).build(),
             job("b1").tenant("b").gpus(8).gang(2).at(571).runs(600).build()]
    r = simulate(fleet().leaves(1, nodes=6).build(), jobs, profile("tenancy"), tenancy=ten)
    starts = {jid: t for t, kind, jid, _ in r.recorder.log if kind == "start"}
    notices = [jid for _, kind, jid, _ in r.recorder.log if kind == "preempt-notice"]
    assert starts["b1"] == 601.0
    assert len(notices) == 1
