"""The tenancy profiles' admit and order phases do what their names say: the admitter decides
who may compete (and keeps the pending order), the orderer decides the order."""

import numpy as np

from gpufleet.engine.types import CycleContext, PendingJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.fairshare import GuaranteedFirst
from gpufleet.policies.quota import QuotaAdmitter, admission_book
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import job

F = "H100-80GB"


def ctx(ten):
    return CycleContext(now=0.0, profile=profile("tenancy"), rng=np.random.default_rng(0), tenancy=ten)


def test_the_admitter_keeps_the_pending_order_and_the_orderer_puts_guaranteed_jobs_first():
    """a (nominal 8), b (nominal 0) and d (nominal 16) share one cohort: 24 GPUs of quota.
    b-1 (8 GPUs) was submitted first and can only borrow; a-1 and d-1 (8 each) fit their
    tenants' nominal quota. Admission charges a-1 and d-1 first (16), then b-1 borrows 8 of
    the 8 left: all three admitted, returned in pending order; the orderer then puts the two
    guaranteed jobs (tier 0) before the borrower (tier 1)."""
    ten = Tenancy(tenants=(TenantQueue("a", "c", ((F, FlavorQuota(8)),)),
                           TenantQueue("b", "c", ((F, FlavorQuota(0)),)),
                           TenantQueue("d", "c", ((F, FlavorQuota(16)),))),
                  cohorts=(Cohort("c"),))
    pending = [PendingJob(job("b-1").tenant("b").gpus(8).at(0).build()),
               PendingJob(job("a-1").tenant("a").gpus(8).at(5).build()),
               PendingJob(job("d-1").tenant("d").gpus(8).at(9).build())]
    c = ctx(ten)
    admitted = QuotaAdmitter().admit(pending, c)
    assert [p.job.id for p in admitted] == ["b-1", "a-1", "d-1"]
    tiers = {r.pending.job.id: r.tier for r in admission_book(c).records}
    assert tiers == {"a-1": 0, "d-1": 0, "b-1": 1}
    ordered = GuaranteedFirst().order(admitted, c)
    assert [p.job.id for p in ordered][-1] == "b-1"
    assert {p.job.id for p in ordered[:2]} == {"a-1", "d-1"}


def test_jobs_admission_never_saw_come_last_in_their_own_order():
    c = ctx(Tenancy(tenants=()))
    xs = [PendingJob(job(f"x{i}").build()) for i in range(3)]
    assert GuaranteedFirst().order(xs, c) == xs
