"""Kueue's admission cycle step by step (policies/kueue/cycle.py): queue, nominate each queue's
head, take the next head, process the entry, requeue.

Queues a and b share cohort c, each with nominal 8 GPUs of one flavor (16 in the cohort), no
preemption. Pending: b1 (12 GPUs, oldest), a1 (8), a2 (4), one pod each.
"""

from __future__ import annotations

import numpy as np

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.types import CycleContext, PendingJob, RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.kueue.cycle import INSUFFICIENT_QUOTA, NO_LONGER_FITS, AdmissionCycle
from gpufleet.policies.quota import with_flavor
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import job

H = "H100-80GB"
TEN = Tenancy(tenants=(TenantQueue("a", "c", ((H, FlavorQuota(8)),)),
                       TenantQueue("b", "c", ((H, FlavorQuota(8)),))), cohorts=(Cohort("c"),))


def pending() -> list[PendingJob]:
    return [PendingJob(job(name).tenant(q).gpus(g).at(t).build())
            for name, q, g, t in (("b1", "b", 12, 0.0), ("a1", "a", 8, 1.0), ("a2", "a", 4, 2.0))]


def step(cycle: AdmissionCycle):
    head = cycle.next_head()
    cycle.process(head)
    cycle.requeue(head)
    return head


def test_a_head_nominated_on_the_cycles_start_is_skipped_when_an_earlier_admission_took_its_room():
    """Nomination, on the cycle's starting state: a1 fits a's nominal (level 0); b1 fits only by
    borrowing 4 of a's idle 8 (level 1). So a1 is taken first and admitted without borrowing,
    and a2 becomes a's head. b1's turn: the flavor it was nominated on no longer holds it (the
    cohort has 16 − 8 = 8 < 12 left), so it is skipped as Kueue skips it (no preemption, no
    hold). a2 (4) then borrows 4 of b's idle 8: admitted. Admitted: a1 and a2."""
    ctx = CycleContext(now=0.0, profile=profile("kueue"), rng=np.random.default_rng(0), tenancy=TEN)
    cycle = AdmissionCycle("kueue-admission", TEN, ctx)
    cycle.queue(pending())
    cycle.nominate_heads()
    assert cycle.heads == {"b": 0, "a": 0}
    assert cycle.keys["a"][0] == 0 and cycle.keys["b"][0] == 1
    assert cycle.nominated["b"].assignment == (H, "fit", True)
    first = step(cycle)
    assert (first.job.id, first.flavor, first.borrows) == ("a1", H, False)
    second = step(cycle)
    assert second.job.id == "b1" and second.flavor is None and second.skipped is not None
    assert not second.held and cycle.holds == {}
    third = step(cycle)
    assert (third.job.id, third.flavor, third.borrows) == ("a2", H, True)
    assert not cycle.heads
    assert [p.job.id for p in cycle.admitted] == ["a1", "a2"]
    assert [(r.pending.job.id, r.admitted, r.reason) for r in cycle.records] == [
        ("a1", True, ""), ("b1", False, NO_LONGER_FITS), ("a2", True, "")]


def test_a_refused_head_holds_its_queues_request_against_a_later_borrower():
    """a already runs 8 GPUs (its nominal), so the cohort has 8 left. b1 (12) fits nowhere at
    nomination: refused for quota, and, its queue unable to always reclaim, it holds its whole
    request, 12 GPUs (no borrowing limit), for the rest of the cycle. a2 (4) was nominated at the
    start on borrowing 4 of b's idle 8, but with the hold 16 − 8 − 12 < 4: skipped, not
    admitted. Without the hold it would have been, and b1 starved by borrowers arriving in the
    same cycle."""
    j = with_flavor(job("r").tenant("a").gpus(8).build(), H)
    ps = j.pod_sets[0]
    run = [RunningJob(j, 0.0, (PodBinding(j.id, ps.name, 0, 0, ps.request),))]
    ctx = CycleContext(now=0.0, profile=profile("kueue"), rng=np.random.default_rng(0), running=run,
                       tenancy=TEN)
    cycle = AdmissionCycle("kueue-admission", TEN, ctx)
    cycle.queue([p for p in pending() if p.job.id != "a1"])
    cycle.nominate_heads()
    first = step(cycle)
    assert (first.job.id, first.flavor, first.held) == ("b1", None, True)
    assert cycle.holds == {"b": (H, 12)}
    second = step(cycle)
    assert (second.job.id, second.flavor) == ("a2", None) and second.skipped is not None
    assert cycle.admitted == []
    assert [(r.pending.job.id, r.reason) for r in cycle.records] == [
        ("b1", INSUFFICIENT_QUOTA), ("a2", NO_LONGER_FITS)]
