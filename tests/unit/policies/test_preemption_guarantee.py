"""A tenant gets its guarantee back by the cheapest eviction set, and the preemptor labels only
the jobs it acts on. Each test builds the running set by hand on 8-GPU nodes at t = 10,000."""

from dataclasses import replace

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.quota import with_flavor
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job

F = "H100-80GB"
NOW = 10_000.0


def tenancy(**nominal: int) -> Tenancy:
    return Tenancy(tenants=tuple(TenantQueue(t, "c", ((F, FlavorQuota(n)),)) for t, n in nominal.items()),
                   cohorts=(Cohort("c"),))


def running(j: Job, node: int, start: float, gpu_slots: int = 1) -> RunningJob:
    """``j`` (one pod) running on ``node`` since ``start``."""
    jj = with_flavor(j, F)
    ps = jj.pod_sets[0]
    return RunningJob(jj, start, tuple(PodBinding(j.id, ps.name, r, node, ps.request)
                                       for r in range(ps.replicas)))


def named(b, name: str) -> Job:
    return replace(b.build(), id=name)


def cycle(run: list[RunningJob], pending: list[Job], ten: Tenancy, nodes: int, policy="tenancy"):
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=nodes).build())
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    return run_cycle(CycleInput(NOW, table, [PendingJob(j) for j in pending], profile(policy),
                                running=run, tenancy=ten))


def no_ckpt(tenant: str, gpus: int):
    return job("x").tenant(tenant).gpus(gpus).runs(90_000)


def test_a_job_within_its_guarantee_reclaims_before_evicting_its_own_cheaper_work():
    """a (nominal 16) runs a-low, 8 GPUs at priority 0, started 100 s ago: evicting it loses
    8 × 100 = 800 GPU-s. b (nominal 16) runs 24 GPUs, 8 borrowed, three jobs started 5,000 s
    ago (8 × 5,000 = 40,000 GPU-s each). a-hi (8 GPUs, priority 10) fits a's guarantee:
    8 + 8 = 16 ≤ 16. Evicting a-low is cheaper now but a-low would come straight back within
    a's nominal and reclaim from b next cycle: two evictions. So one reclaim from b, none of a."""
    run = [running(named(no_ckpt("a", 8), "a-low"), 0, NOW - 100)]
    run += [running(named(no_ckpt("b", 8), f"b{i}"), i + 1, NOW - 5_000) for i in range(3)]
    r = cycle(run, [named(no_ckpt("a", 8).priority(10), "a-hi")], tenancy(a=16, b=16), nodes=4)
    assert [(p.for_job, p.job[0]) for p in r.preemptions] == [("a-hi", "b")]
    assert r.preemptions[0].reason.startswith("reclaim")


def test_a_tenant_below_its_guarantee_reaches_it_by_evicting_its_own_low_work_and_reclaiming():
    """One node of 8 GPUs. a: nominal 2, runs a-low (1 GPU, priority 0). b: nominal 6, runs seven
    1-GPU jobs (1 borrowed). a-hi asks 2 GPUs at priority 10: 1 + 2 = 3 > 2, so reclaim alone is
    not justified, and evicting a-low alone frees 1 GPU < 2. Together: a at 0 + 2 = 2 ≤ 2 and
    b at 7 − 1 = 6 ≥ its nominal 6 — a-low plus one of b's jobs, exactly two notices."""
    run = [running(named(no_ckpt("a", 1), "a-low"), 0, NOW - 100)]
    run += [running(named(no_ckpt("b", 1), f"b{i}"), 0, NOW - 1_000 * (i + 1)) for i in range(7)]
    r = cycle(run, [named(no_ckpt("a", 2).priority(10), "a-hi")], tenancy(a=2, b=6), nodes=1)
    victims = sorted(p.job for p in r.preemptions)
    assert len(victims) == 2 and victims[0] == "a-low" and victims[1].startswith("b")
    # The cheapest of b's: b0 started most recently (1,000 s of work lost against 2,000…7,000).
    assert victims[1] == "b0"


def test_reclaim_stops_at_a_borrower_once_it_is_back_within_its_nominal_quota():
    """4 nodes. a: nominal 16, nothing running; b: nominal 16, runs 24 (8 borrowed) on nodes
    0-2, cheap to evict (started 100-300 s ago); c: nominal 0, runs 8 borrowed on node 3,
    expensive (started 9,000 s ago). a asks 16 (2 nodes): after one of b's jobs b is at 16 =
    nominal, so the second GPU block must come from c, however cheaper b's next job is."""
    run = [running(named(no_ckpt("b", 8), f"b{i}"), i, NOW - 100 * (i + 1)) for i in range(3)]
    run += [running(named(no_ckpt("c", 8), "c0"), 3, NOW - 9_000)]
    r = cycle(run, [named(no_ckpt("a", 8).gang(2), "a1")], tenancy(a=16, b=16, c=0), nodes=4)
    assert sorted(p.job for p in r.preemptions) == ["b0", "c0"]


def test_an_unneeded_victim_is_reprieved():
    """2 nodes, a: nominal 8 nothing running; b: nominal 8, runs b-small (4 GPUs, 100 s,
    400 GPU-s lost) and b-old (4 GPUs, 9,000 s, 36,000 GPU-s) on node 0, and b-big (8 GPUs,
    1,000 s, 8,000 GPU-s) on node 1: 16 GPUs, 8 borrowed. a asks 8 on one node. Cheapest first:
    b-small (room 4 < 8), then b-big (room 12, fits on node 1). Without b-small J still fits on
    node 1, and b stays above nominal after b-big alone (16 − 8 = 8 ≥ 8): b-small is reprieved."""
    run = [running(named(no_ckpt("b", 4), "b-small"), 0, NOW - 100),
           running(named(no_ckpt("b", 4), "b-old"), 0, NOW - 9_000),
           running(named(no_ckpt("b", 8), "b-big"), 1, NOW - 1_000)]
    r = cycle(run, [named(no_ckpt("a", 8), "a1")], tenancy(a=8, b=8), nodes=2)
    assert [p.job for p in r.preemptions] == ["b-big"]


def test_a_hopeless_beneficiary_does_not_stop_later_ones():
    """c (nominal 0) asks 16 GPUs it has no quota for and nothing of its own to evict: hopeless.
    a, behind it, fits its guarantee and reclaims one of b's borrowed jobs."""
    run = [running(named(no_ckpt("b", 8), f"b{i}"), i, NOW - 100 * (i + 1)) for i in range(4)]
    pending = [named(no_ckpt("c", 8).gang(2), "c-big"), named(no_ckpt("a", 8), "a1")]
    r = cycle(run, pending, tenancy(c=0, a=16, b=16), nodes=4)
    assert [p.for_job for p in r.preemptions] == ["a1"]


def test_a_job_backfill_held_back_keeps_its_reason_and_estimated_start():
    """tenancy-easy, 2 nodes, a (nominal 32) runs a-run on node 0 until 10,500. a-big (2 × 8)
    is blocked and reserved for 10,500; a-small (8 GPUs, 5,000 s) fits node 1 now but would delay
    a-big, so backfill holds it. Nothing is under eviction notice and nothing is preempted: the
    preemptor must not relabel a-small "waiting for capacity already being evicted"."""
    run = [running(named(no_ckpt("a", 8).runs(1_000), "a-run"), 0, NOW - 500)]
    pending = [named(no_ckpt("a", 8).gang(2).runs(3_000), "a-big"),
               named(no_ckpt("a", 8).runs(5_000), "a-small")]
    r = cycle(run, pending, tenancy(a=32, b=0), nodes=2, policy="tenancy-easy")
    assert r.preemptions == ()
    small = r.statuses["a-small"]
    assert not any("being evicted" in why for why in small.reasons)
    assert small.code is StatusCode.WAIT and small.estimated_start is not None
