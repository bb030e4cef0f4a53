"""Our tenancy preemptor considers every flavor a refused job could use: a guarantee held by a
borrower on one flavor is reclaimed before the tenant's own work is evicted on another."""

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.quota import with_flavor
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job

H, A = "H100-80GB", "A100-80GB"


def on(j, node, flavor):
    jj = with_flavor(j, flavor)
    ps = jj.pod_sets[0]
    return RunningJob(jj, 5_000.0, (PodBinding(j.id, ps.name, 0, node, ps.request),))


def test_a_refused_job_reclaims_its_guarantee_on_another_flavor_before_evicting_its_own_work():
    """a: H100 nominal 8, then A100 nominal 8; b: nominal 0 on both, in cohort c. Node 0 H100
    runs a-low (a, 8, priority 0); node 1 A100 runs b-1 (b, 8 borrowed: a's idle A100 quota).
    a-new (8 GPUs, any model, priority 5) is refused: on H100 a is at its nominal (8 + 8 > 8,
    nothing to borrow), on A100 within it (0 + 8 ≤ 8) but b holds the 8. The guarantee is on
    A100: b-1 is reclaimed; a-low, a's own cheaper work on the first flavor, keeps running."""
    ten = Tenancy(tenants=(TenantQueue("a", "c", ((H, FlavorQuota(8)), (A, FlavorQuota(8)))),
                           TenantQueue("b", "c", ((H, FlavorQuota(0)), (A, FlavorQuota(0))))),
                  cohorts=(Cohort("c"),))
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=1, gpu=H).leaves(1, nodes=1, gpu=A).build())
    run = [on(job("a-low").tenant("a").gpus(8).build(), 0, H),
           on(job("b-1").tenant("b").gpus(8).build(), 1, A)]
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    new = job("a-new").tenant("a").gpus(8).priority(5).build()
    r = run_cycle(CycleInput(10_000.0, table, [PendingJob(new)], profile("tenancy"), running=run,
                             tenancy=ten))
    assert [(p.job, p.for_job) for p in r.preemptions] == [("b-1", "a-new")]
