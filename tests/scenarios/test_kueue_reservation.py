"""The ``kueue`` profile across cycles: quota reserved stays reserved, a preemptor keeps its
queue's head, and so a reclaim does not churn.

Written from Kueue's documents, not from our code:

* "Admission" (site/content/en/docs/concepts/admission.md): "If the quota is available, the
  Kueue reserves resources for this Workload and prevents other Workloads from using the same
  resources" — the ``QuotaReserved`` condition, held until the workload finishes or is evicted,
  whether or not kube-scheduler has found its pods room yet.
* KEP-7157 "Sticky ClusterQueue Head Policy" (kubernetes-sigs/kueue#7157, fixing #6929): in a
  ``BestEffortFIFO`` ClusterQueue, a workload requeued with pending preemption stays first in
  its queue's order until it is admitted, so an older workload of its queue that does not fit
  cannot take its turn while its victims leave, and the victims cannot be re-admitted into the
  quota they release.
* ``CanAlwaysReclaim`` (pkg/scheduler/preemption): a head that needs preemption but has no
  targets reserves quota for the cycle only when its queue cannot always reclaim, i.e. unless
  ``reclaimWithinCohort: Any``.

Queues a and b (nominal 8 GPUs each) share cohort c; 8-GPU nodes; one flavor H100-80GB.
Outcomes as data: who is admitted or started, who is preempted with which reason, who waits and
why.
"""

from dataclasses import replace

from tests.scenarios.test_kueue_rules import on

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import AdmissionState, CycleInput, CycleResult, PendingJob, RunningJob
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Cohort, FlavorQuota, KueueQueuePolicy, Tenancy, TenantQueue
from gpufleet.policies.kueue.cycle import INSUFFICIENT_QUOTA, NO_LONGER_FITS
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.sim.usage import UsageTracker
from gpufleet.testing.builders import fleet, job

F = "H100-80GB"
NOW = 10_000.0
HOUR = 3600.0


def tenancy(a_reclaim: str = "Any") -> Tenancy:
    def pol(reclaim: str) -> KueueQueuePolicy:
        return KueueQueuePolicy(within_cluster_queue="LowerPriority", reclaim_within_cohort=reclaim)
    return Tenancy(tenants=(TenantQueue("a", "c", ((F, FlavorQuota(8)),), kueue=pol(a_reclaim)),
                            TenantQueue("b", "c", ((F, FlavorQuota(8)),), kueue=pol("Any"))),
                   cohorts=(Cohort("c"),), grace_s=30.0)


def w(name: str, tenant: str, gpus: int, submit: float = 0.0, run: float = 90_000.0) -> Job:
    return replace(job("x").tenant(tenant).gpus(gpus).at(submit).runs(run).build(), id=name)


def cycle(now: float, run: list[RunningJob], pending: list[Job], ten: Tenancy, nodes: int,
          state: AdmissionState | None = None) -> CycleResult:
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=nodes).build())
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    return run_cycle(CycleInput(now, table, [PendingJob(j) for j in pending], profile("kueue"),
                                running=run, tenancy=ten, admission=state or AdmissionState()))


def borrowers() -> Tenancy:
    """a and d lend nothing and borrow everything (nominal 0); b holds the cohort's 16."""
    def pol() -> KueueQueuePolicy:
        return KueueQueuePolicy(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")
    return Tenancy(tenants=tuple(TenantQueue(n, "c", ((F, FlavorQuota(q)),), kueue=pol())
                                 for n, q in (("a", 0), ("b", 16), ("d", 0))),
                   cohorts=(Cohort("c"),), grace_s=30.0)


def test_a_workload_admitted_before_its_pods_fit_keeps_its_quota_until_it_starts():
    """2 nodes (16 GPUs). b runs b-1 (4 GPUs, node 0) and b-2 (4 GPUs, node 1): 8 of the
    cohort's 16 in use. a-1 asks one 8-GPU pod: a borrows 8 (nominal 0) and the cohort has
    16 − 8 = 8 unused, so Kueue reserves its quota; no node has 8 free GPUs (4 + 4), so its pod
    waits for kube-scheduler.
    Next cycle d-1 (8 GPUs, priority 5) arrives in d (nominal 0): it would borrow from a cohort
    whose unused quota is 16 − 8 − 8 (a-1's reservation) = 0, and d has no candidates (a
    borrowing workload preempts only with borrowWithinCohort): it waits, InsufficientUnusedQuota.
    (Re-deciding admission every cycle, d-1 — same borrowing level, higher priority — would be
    admitted in a-1's place.)
    Then b-1 finishes: node 0 has 8 free GPUs and a-1 starts; its reservation ends (its pod
    holds the quota now); d-1 still waits (16 − 4 − 8 = 4 unused < 8)."""
    ten = borrowers()
    b1, b2 = on(w("b-1", "b", 4), 0), on(w("b-2", "b", 4), 1)
    a1 = w("a-1", "a", 8, submit=100.0)
    r1 = cycle(NOW, [b1, b2], [a1], ten, nodes=2)
    assert r1.started == ()
    assert set(r1.admission.reserved) == {"a-1"}
    assert r1.statuses["a-1"].code is StatusCode.UNSCHEDULABLE

    d1 = replace(w("d-1", "d", 8, submit=150.0), priority=5)
    r2 = cycle(NOW + 60, [b1, b2], [a1, d1], ten, nodes=2, state=r1.admission)
    assert r2.started == () and r2.preemptions == ()
    assert r2.statuses["d-1"].code is StatusCode.NOT_ADMITTED
    assert r2.statuses["d-1"].reasons[0] == INSUFFICIENT_QUOTA
    assert set(r2.admission.reserved) == {"a-1"}

    r3 = cycle(NOW + 120, [b2], [a1, d1], ten, nodes=2, state=r2.admission)
    assert r3.started == ("a-1",)
    assert r3.admission.reserved == {}
    assert r3.statuses["d-1"].reasons[0] == INSUFFICIENT_QUOTA


def test_a_reservation_whose_pods_have_not_started_is_reclaimed_first_and_loses_no_work():
    """Same state after a-1's reservation (a borrowing 8, pod waiting for a node). b-3 (4 GPUs)
    arrives in b: 8 + 4 ≤ 16, within b's nominal, but the cohort has 0 unused: it reclaims from
    the borrowing queues. Kueue's candidates are admitted workloads — a-1's QuotaReserved counts
    though its pod never ran — and evicting it frees 8 ≥ 4; b-3's pod fits a node now (4 free on
    node 0). So: a-1 preempted (InCohortReclamation), its reservation released at once (no pods
    to stop, no work lost), no running job touched. Next cycle b-3 is admitted and starts, and
    a-1 waits: 16 − 8 − 4 = 4 unused < 8.
    Kueue's reason for the one left out: nominated while it fitted, it is skipped once the
    head before it took the quota ("no longer fits after processing another workload")."""
    ten = borrowers()
    b1, b2 = on(w("b-1", "b", 4), 0), on(w("b-2", "b", 4), 1)
    a1 = w("a-1", "a", 8, submit=100.0)
    r1 = cycle(NOW, [b1, b2], [a1], ten, nodes=2)
    b3 = w("b-3", "b", 4, submit=150.0)
    r2 = cycle(NOW + 60, [b1, b2], [a1, b3], ten, nodes=2, state=r1.admission)
    assert [(p.job, p.for_job, p.reason, p.reserved) for p in r2.preemptions] == [
        ("a-1", "b-3", "InCohortReclamation", True)]
    assert r2.admission.reserved == {}

    r3 = cycle(NOW + 60, [b1, b2], [a1, b3], ten, nodes=2, state=r2.admission)
    assert r3.started == ("b-3",)
    assert r3.statuses["a-1"].reasons[0] == NO_LONGER_FITS


def _sticky_state() -> tuple[Tenancy, list[RunningJob], Job, Job, RunningJob]:
    """3 nodes (24 GPUs; the cohort's quota is 16). a runs a-run (6, node 1): a at 6. b runs
    b-1 (6, node 0) and v (4, node 2, the oldest job, submitted at 0): b at 10, borrowing 2 of
    a's 8; the cohort's 16 are all in use."""
    ten = tenancy()
    b1 = on(w("b-1", "b", 6, submit=1.0), 0, start=NOW - 2_000)
    a_run = on(w("a-run", "a", 6, submit=2.0), 1, start=NOW - 2_000)
    v = on(w("v", "b", 4, submit=0.0), 2, start=NOW - 1_000)
    x = w("x", "a", 4, submit=50.0)
    p = w("p", "a", 2, submit=100.0)
    return ten, [b1, a_run], x, p, v


def test_a_workload_pending_preemption_keeps_its_queues_head_until_admitted():
    """Kueue#6929's pattern, with a's older workload x in the way. Pending in a: x (4 GPUs,
    submitted 50) and p (2 GPUs, submitted 100); same priority, so x is a's head by age.
    Cycle 1: x would borrow (6 + 4 > 8) and the cohort has 0 unused; its only candidates would
    come from borrowWithinCohort (Never) or lower priority in a (none): no targets, and a can
    always reclaim (Any), so it holds nothing. p fits a's nominal (6 + 2 ≤ 8) and reclaims from
    the borrowing queue b: candidates newest first, v (4 GPUs) — after which b is at 6 ≤ 8 and
    the cohort has 4 unused ≥ 2. One preemption, InCohortReclamation; p is now a's sticky head.
    Cycle 2, 30 s later: v is gone and back in b's queue (submitted at 0, the oldest job).
    Heads are ordered by borrowing level, then priority, then age: p within nominal (level 0)
    before v (b at 6 + 4 > 8: level 1). p is admitted and starts (4 unused − 2 = 2 left); v and
    x (4 GPUs each) wait, and nobody is preempted again: x never fitted; v was nominated into the
    4 unused and is skipped ("no longer fits after processing another workload", Kueue's reason).
    Without the sticky head, a's head would be x (older than p), x's key (level 1, age 50)
    comes after v's (level 1, age 0): v would be re-admitted into the 4 it released and p
    would preempt it again — every 30 s."""
    ten, run, x, p, v = _sticky_state()
    r1 = cycle(NOW, [*run, v], [x, p], ten, nodes=3)
    assert [(e.job, e.for_job, e.reason) for e in r1.preemptions] == [("v", "p", "InCohortReclamation")]
    assert r1.admission.sticky == {"a": "p"}

    r2 = cycle(NOW + 30, run, [x, p, v.job], ten, nodes=3, state=r1.admission)
    assert r2.started == ("p",)
    assert r2.preemptions == ()
    for waiting, reason in (("x", INSUFFICIENT_QUOTA), ("v", NO_LONGER_FITS)):
        assert r2.statuses[waiting].code is StatusCode.NOT_ADMITTED
        assert r2.statuses[waiting].reasons[0] == reason
    assert r2.admission.sticky == {}


def test_a_head_without_targets_holds_nothing_when_its_queue_can_always_reclaim():
    """2 nodes. b runs b-1 (8, node 0): b at nominal. a runs a-1 (4, node 1): 4 GPUs unused.
    a's head a-2 (8 GPUs) would borrow (4 + 8 > 8) more than the 4 unused; with equal priorities
    and borrowWithinCohort Never it has no preemption targets. Kueue reserves quota for such a
    head only when its queue cannot always reclaim (CanAlwaysReclaim: reclaimWithinCohort Any).
    Any: nothing held, b's head b-2 (4, borrowing) takes the 4 unused GPUs and starts.
    Never: a-2 reserves up to its borrowing limit (none: its 8 GPUs) for the cycle, the cohort's
    usage would be 12 + 8 > 16, and b-2 waits."""
    for reclaim, b2_starts in (("Any", True), ("Never", False)):
        ten = tenancy(a_reclaim=reclaim)
        run = [on(w("b-1", "b", 8), 0), on(w("a-1", "a", 4), 1)]
        r = cycle(NOW, run, [w("a-2", "a", 8, submit=10.0), w("b-2", "b", 4, submit=20.0)], ten, nodes=2)
        assert ("b-2" in r.started) is b2_starts, reclaim
        assert r.statuses["a-2"].reasons[0] == INSUFFICIENT_QUOTA


def test_a_reclaim_is_not_repeated_while_the_preemptor_waits_for_its_victim():
    """The sticky scenario in the simulator, to the end: b-1 and a-run (6 GPUs each) and v (4,
    submitted a second later, so the most recently admitted) run 10 h; x (a, 4 GPUs) arrives at
    10 s and p (a, 2 GPUs, 1 h) at 20 s; jobs of a tenant with no ClusterQueue arrive every
    minute for an hour, each waking a cycle (they are never admitted).
    Who can preempt: priorities are equal, so withinClusterQueue LowerPriority gives no
    candidates, and borrowWithinCohort is Never, so only a workload within its queue's nominal
    can, by reclaiming borrowed quota. p (6 + 2 ≤ 8) reclaims v at 20 s (b at 10 > 8; v is the
    newest). With its quota reserved once admitted and its head sticky meanwhile, p is admitted
    when v is gone, at 20 + 30 s grace = 50 s, and runs to its end. The others within nominal
    never lack quota: x is within nominal only after a-run ends (a at 0 + 4), and v or b-1 only
    after a b job ends, when the cohort has that job's GPUs unused. So at most 1 preemption.
    (Re-deciding admission each cycle with a's head by age, v is re-admitted into the quota it
    released and reclaimed again at each wake-up: 61 preemptions in this run, and p waits the
    whole 10 h.)"""
    ten = tenancy()
    work = [w("b-1", "b", 6, submit=0.0, run=10 * HOUR), w("a-run", "a", 6, submit=0.0, run=10 * HOUR),
            w("v", "b", 4, submit=1.0, run=10 * HOUR), w("x", "a", 4, submit=10.0, run=10 * HOUR),
            w("p", "a", 2, submit=20.0, run=HOUR)]
    wakeups = [w(f"z-{i}", "z", 1, submit=60.0 * i + 5, run=60.0) for i in range(1, 61)]
    r = simulate(fleet().leaves(1, nodes=3).build(), work + wakeups, profile("kueue"), tenancy=ten,
                 usage_tracker=UsageTracker(ten.half_life_s))
    assert r.preemptions <= 1
    assert r.starts["p"] == 50.0
    assert {j.id for j in work} <= set(r.finishes)  # nobody starves: every queued job runs to its end
