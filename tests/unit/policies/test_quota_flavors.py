"""Quota arithmetic at its edges: the borrowing limit's exact boundary, a cohort's own borrowing
limit, the choice between two GPU flavors and the pinning of an admitted job to its flavor."""

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.quota import QuotaLedger, with_flavor
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job

H, A = "H100-80GB", "A100-80GB"


def cycle(ten, pending, running=(), groups=((H, 4),)):
    b = fleet()
    for model, n in groups:
        b = b.leaves(1, nodes=n, gpu=model)
    table = NodeTable.from_fleet(b.build())
    for rj in running:
        for bd in rj.bindings:
            table.take(bd.node, bd.request)
    return table, run_cycle(CycleInput(0.0, table, [PendingJob(j) for j in pending], profile("tenancy"),
                                       running=list(running), tenancy=ten))


def test_the_borrowing_limit_admits_exactly_nominal_plus_limit():
    """a: nominal 16, borrowing limit 8, b lends all of its 16 (4 nodes = 32 GPUs). 24 = 16 + 8
    GPUs are admitted; 32 = 16 + 16 exceed the limit by 8 and are refused for it."""
    ten = Tenancy(tenants=(TenantQueue("a", "c", ((H, FlavorQuota(16, 8)),)),
                           TenantQueue("b", "c", ((H, FlavorQuota(16)),))), cohorts=(Cohort("c"),))
    _, ok = cycle(ten, [job("a24").tenant("a").gpus(8).gang(3).build()])
    assert ok.started == ("a24",)
    _, no = cycle(ten, [job("a32").tenant("a").gpus(8).gang(4).build()])
    assert no.statuses["a32"].reasons[0] == "ExceedsBorrowingLimit"
    assert "borrowing limit 8" in no.statuses["a32"].reasons[1]


def test_a_cohort_borrowing_limit_caps_what_its_whole_subtree_borrows():
    """org > {t1 > a, t2 > b}; a and b nominal 16 each; t2 may borrow at most 8 from org. b runs
    16. available(org) = 32 − 16 = 16; t2 stores 16 and uses 16 of it in org, so it may draw
    min(16, 16 − 16 + 8) = 8 more: available(b) = 0 (own, all used) + 8. a, in t1 without a
    limit, may use its own 16 (org has 16 free)."""
    ten = Tenancy(tenants=(TenantQueue("a", "t1", ((H, FlavorQuota(16)),)),
                           TenantQueue("b", "t2", ((H, FlavorQuota(16)),))),
                  cohorts=(Cohort("org"), Cohort("t1", "org"),
                           Cohort("t2", "org", ((H, FlavorQuota(0, 8)),))))
    led = QuotaLedger(ten)
    led.add("b", H, 16)
    assert led.available(("t", "b"), H) == 8
    assert led.available(("t", "a"), H) == 16


def flavors_tenancy():
    """a: H100 nominal 8 first, then A100 nominal 8; b: H100 nominal 8 (lends it)."""
    return Tenancy(tenants=(TenantQueue("a", "c", ((H, FlavorQuota(8)), (A, FlavorQuota(8)))),
                            TenantQueue("b", "c", ((H, FlavorQuota(8)),))), cohorts=(Cohort("c"),))


def on(j, node):
    jj = with_flavor(j, H)
    ps = jj.pod_sets[0]
    return RunningJob(jj, 0.0, (PodBinding(j.id, ps.name, 0, node, ps.request),))


def test_a_job_goes_to_the_next_flavor_within_nominal_before_borrowing_on_the_first():
    """a already runs 8 on H100 (its nominal there). a-2 (8 GPUs, any model): H100 would need
    borrowing b's 8; A100 fits within a's nominal 8: admitted on A100, and its pods are pinned
    there (node 2 is the A100 node; nodes 0-1 H100)."""
    table, r = cycle(flavors_tenancy(), [job("a-2").tenant("a").gpus(8).build()],
                     running=[on(job("a-1").tenant("a").gpus(8).build(), 0)], groups=((H, 2), (A, 1)))
    assert r.started == ("a-2",)
    assert {table.names[b.node] for b in r.bindings} == {table.names[2]}
    assert all(b.request.gpu_models == (A,) for b in r.bindings)


def test_a_job_that_allows_only_the_first_flavor_borrows_there():
    """The same, but a-2 asks for H100 only: no A100 quota applies; it borrows b's unused 8."""
    table, r = cycle(flavors_tenancy(), [job("a-2").tenant("a").gpus(8).models(H).build()],
                     running=[on(job("a-1").tenant("a").gpus(8).build(), 0)], groups=((H, 2), (A, 1)))
    assert r.started == ("a-2",)
    assert {b.node for b in r.bindings} == {1}
