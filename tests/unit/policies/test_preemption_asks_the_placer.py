"""The tenancy preemptor chooses victims with the profile's own placer, not plain gang best fit.

Before, ``TenancyPreemptor`` asked ``fit_gang`` (whole-GPU best fit, topology ignored) whether the
beneficiary fits once victims are released, so a profile with a topology or fractional placer
evicted jobs whose freed GPUs that placer could never use, and never helped a fractional job.
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
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.fairshare import DominantResourceFairShare, GuaranteedFirst
from gpufleet.policies.fractional import FractionalGangFit
from gpufleet.policies.gang import GangBestFit
from gpufleet.policies.preemption import TenancyPreemptor
from gpufleet.policies.quota import QuotaAdmitter, with_flavor
from gpufleet.policies.topology import TopologyAware
from gpufleet.testing.builders import fleet, job

H = "H100-80GB"
NOW = 10_000.0
TEN = Tenancy(tenants=(TenantQueue("a", "c", ((H, FlavorQuota(32)),)),), cohorts=(Cohort("c"),))


def tenancy_with(placer) -> Profile:
    admitter = QuotaAdmitter(DominantResourceFairShare())
    return Profile("tenancy-custom", placer=placer, admitter=admitter, orderer=GuaranteedFirst(),
                   preemptor=TenancyPreemptor(admitter))


def running(name: str, node: int, age: float, gpus: int = 8, priority: int = 0) -> RunningJob:
    """One pod of tenant a on ``node`` since NOW − ``age``, no checkpoints: losing it costs
    gpus × age GPU-seconds under the checkpoint-aware rule."""
    j = with_flavor(replace(job("x").tenant("a").gpus(gpus).priority(priority).runs(90_000).build(),
                            id=name), H)
    ps = j.pod_sets[0]
    return RunningJob(j, NOW - age, (PodBinding(j.id, ps.name, 0, node, ps.request),))


def cycle(run: list[RunningJob], pending: list[Job], prof: Profile, flt):
    table = NodeTable.from_fleet(flt)
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    return run_cycle(CycleInput(NOW, table, [PendingJob(j) for j in pending], prof,
                                running=run, tenancy=TEN))


def two_leaves_three_victims(placer):
    """The cycle of the first test below, under a tenancy profile with ``placer``."""
    flt = fleet().leaves(2, nodes=2).build()
    run = [running("v1", 0, 100), running("v2", 2, 200), running("v3", 1, 300),
           running("keep", 3, 50, priority=10)]
    hi = replace(job("hi").tenant("a").gpus(8).gang(2).priority(10).build(), topology_required="leaf")
    return cycle(run, [hi], tenancy_with(placer), flt)


def test_victims_are_chosen_so_that_the_topology_placer_can_use_the_freed_gpus():
    """Two leaves of two 8-GPU nodes: leaf 0 = nodes 0, 1; leaf 1 = nodes 2, 3. Tenant a (nominal
    32, the whole fleet) runs v1 on node 0 (age 100 s: costs 800 GPU-s), v2 on node 2 (age 200 s:
    1,600) and v3 on node 1 (age 300 s: 2,400), all priority 0, and keeps node 3 with priority-10 work. ``hi``
    (priority 10, 2 × 8 GPUs, topology_required=leaf) needs one whole leaf,
    and a must give up 32 + 16 − 32 = 16 GPUs of lower-priority work first.

    Cheapest first: v1 frees node 0 (one node, too few); v1 + v2 free nodes 0 and 2, which plain
    best fit accepts (spanning leaves) but the leaf rule refuses; v1 + v2 + v3 free leaf 0. Reprieve,
    most expensive first: without v3 the gang has no leaf, so v3 stays chosen; without v2 leaf 0 is
    still free, so v2 is spared. The topology placer's answer: evict v1 and v3 (3,200 GPU-s), never
    v2. Plain best fit would have evicted v1 and v2, after which ``hi`` still could not start."""
    r = two_leaves_three_victims(TopologyAware())
    assert sorted(p.job for p in r.preemptions) == ["v1", "v3"]
    assert r.statuses["hi"].code is StatusCode.WAIT


def test_the_same_fleet_under_gang_best_fit_evicts_the_two_cheapest():
    """The control: with plain gang best fit as the profile's placer, nodes 0 and 2 are enough
    (the gang may span leaves), so the two cheapest, v1 and v2, are the victims."""
    r = two_leaves_three_victims(GangBestFit())
    assert sorted(p.job for p in r.preemptions) == ["v1", "v2"]


def test_a_fractional_beneficiary_gets_victims_under_a_fractional_placer():
    """One 8-GPU node fully used by tenant a's v (priority 0, 8 GPUs). ``slice`` (priority 10) asks
    one 1g.10gb MIG instance. Gang best fit refuses MIG requests outright, so before the preemptor
    found no victim; the fractional placer can host it once v is gone: v is evicted for it."""
    flt = fleet().leaves(1, nodes=1).build()
    hi = job("slice").tenant("a").mig("1g.10gb").priority(10).build()
    r = cycle([running("v", 0, 100)], [hi], tenancy_with(FractionalGangFit()), flt)
    assert [(p.job, p.for_job) for p in r.preemptions] == [("v", "slice")]
