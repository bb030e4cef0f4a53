"""Edges of the quota reservation the ``kueue`` profile carries across cycles (found in review).

A reservation is quota (Kueue's ``QuotaReserved``): it must be charged where it really is — on
every flavor its pod sets landed on — and it must still describe the job and the queue it was
made for, or the job is decided afresh.
"""

from dataclasses import replace

from tests.scenarios.test_kueue_rules import A100, NOW, F, w

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import AdmissionState, CycleInput, PendingJob, QuotaReservation, RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, KueueQueuePolicy, Tenancy, TenantQueue
from gpufleet.policies.quota import with_flavor
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet


def _reclaim_with_a_carried_reservation(split: bool) -> list[tuple[str, str, str]]:
    """Cohort c: a (8 H100 + 8 A100), b (8 H100, reclaimWithinCohort Any), d (0 H100, running
    d-1 on 8 H100: a borrower); e outside the cohort fills the other H100 node. a carries a
    reservation: 8 GPUs on H100 (and, when ``split``, 4 more on A100 in a second pod set).
    Either way a holds exactly its nominal 8 on H100 (and 4 ≤ 8 on A100): a borrows nothing.
    b-2 (8 GPUs, within b's nominal) arrives: the cohort's H100 quota is 8 + 8 + 0 = 16, held by
    a's 8 and d's 8, so b-2 needs 8 back, and the only borrower is d."""
    base = w("mixed", "a", 8, submit=100.0)
    trainer = replace(base.pod_sets[0], name="trainer")
    evaluator = replace(base.pod_sets[0], name="eval", request=replace(base.pod_sets[0].request, gpus=4))
    mixed = replace(base, pod_sets=(trainer, evaluator)) if split else base
    tenancy = Tenancy(tenants=(
        TenantQueue("a", "c", ((F, FlavorQuota(8)), (A100, FlavorQuota(8)))),
        TenantQueue("b", "c", ((F, FlavorQuota(8)),), kueue=KueueQueuePolicy(reclaim_within_cohort="Any")),
        TenantQueue("d", "c", ((F, FlavorQuota(0)),)),
        TenantQueue("e", None, ((F, FlavorQuota(8)),))), cohorts=(Cohort("c"),), grace_s=30.0)
    d1, e1 = with_flavor(w("d-1", "d", 8), F), with_flavor(w("e-1", "e", 8), F)
    running = [RunningJob(d1, NOW - 1000, (PodBinding("d-1", "worker", 0, 0, d1.pod_sets[0].request),)),
               RunningJob(e1, NOW - 1000, (PodBinding("e-1", "worker", 0, 1, e1.pod_sets[0].request),))]
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).leaves(1, nodes=1, gpu=A100).build())
    for rj in running:
        for b in rj.bindings:
            table.take(b.node, b.request)
    reservation = QuotaReservation(F, NOW - 10, ((0, F), (1, A100)) if split else ())
    out = run_cycle(CycleInput(NOW, table, [PendingJob(mixed), PendingJob(w("b-2", "b", 8, submit=200.0))],
                               profile("kueue"), running=running, tenancy=tenancy,
                               admission=AdmissionState({"mixed": reservation})))
    return [(str(p.job), str(p.for_job), p.reason) for p in out.preemptions]


def test_a_reservation_split_over_two_flavors_is_charged_on_each_and_not_taken_for_a_borrower() -> None:
    """Charged all on H100, the split reservation would show a at 12 of 8 on H100 — a borrower —
    and be released for b-2. Charged per pod set it is 8 of 8 on H100 and 4 of 8 on A100, so, as
    with the single-flavor reservation, only the real borrower d-1 is reclaimed."""
    single = _reclaim_with_a_carried_reservation(split=False)
    split = _reclaim_with_a_carried_reservation(split=True)
    assert single == [("d-1", "b-2", "InCohortReclamation")]
    assert split == single


def test_a_reservation_on_a_flavor_the_queue_no_longer_offers_is_dropped_and_the_job_decided_afresh() -> None:
    """Queue a's ClusterQueue was changed to offer only H100, with nominal 0; job j carries a
    reservation on A100 from before. Starting j on the A100 node would use quota nobody has; a
    fresh decision refuses it (0 of 0 on H100), so the carried reservation must give the same."""
    tenancy = Tenancy(tenants=(TenantQueue("a", None, ((F, FlavorQuota(0)),)),))
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=1).leaves(1, nodes=1, gpu=A100).build())
    j = w("j", "a", 8)
    carried = run_cycle(CycleInput(NOW, table, [PendingJob(j)], profile("kueue"), tenancy=tenancy,
                                   admission=AdmissionState({j.id: QuotaReservation(A100, NOW - 10)})))
    fresh = run_cycle(CycleInput(NOW, table, [PendingJob(j)], profile("kueue"), tenancy=tenancy))
    assert carried.started == fresh.started == ()
    assert carried.statuses[j.id].code == fresh.statuses[j.id].code == StatusCode.NOT_ADMITTED
    assert j.id not in carried.admission.reserved


def test_a_reservation_naming_a_pod_set_the_job_no_longer_has_is_dropped_without_an_error() -> None:
    """A reservation for pod sets 0 (H100) and 1 (A100) of a job that now has one pod set (a
    resubmitted job id): the reservation no longer describes the job, so the job (8 GPUs within
    a's 16 of H100) is admitted afresh on H100 and starts — no IndexError out of the cycle."""
    tenancy = Tenancy(tenants=(TenantQueue("a", None, ((F, FlavorQuota(16)), (A100, FlavorQuota(8)))),))
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=1).leaves(1, nodes=1, gpu=A100).build())
    j = w("j", "a", 8)
    stale = QuotaReservation(F, NOW - 10, ((0, F), (1, A100)))
    out = run_cycle(CycleInput(NOW, table, [PendingJob(j)], profile("kueue"), tenancy=tenancy,
                               admission=AdmissionState({j.id: stale})))
    assert out.started == (j.id,)
    assert {b.node for b in out.bindings} == {0}
