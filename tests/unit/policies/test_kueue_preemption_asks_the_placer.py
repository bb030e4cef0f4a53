"""Kueue's preemptor judges "W fits once the targets are gone" with the profile's own placer.

Before, ``KueuePreemptor`` asked ``fit_gang`` (whole-GPU best fit, topology ignored), so a Kueue
profile built over a topology placer chose targets whose freed GPUs that placer could not use:
the workload stayed pending after its victims were evicted.
"""

from __future__ import annotations

from dataclasses import replace

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, KueueQueuePolicy, Tenancy, TenantQueue
from gpufleet.policies.gang import GangBestFit
from gpufleet.policies.kueue.admit import KueueAdmitter, KueueOrder
from gpufleet.policies.kueue.preemption import KueuePreemptor
from gpufleet.policies.quota import with_flavor
from gpufleet.policies.topology import TopologyAware
from gpufleet.testing.builders import fleet, job

H = "H100-80GB"
NOW = 10_000.0
LOWER = KueueQueuePolicy(within_cluster_queue="LowerPriority")
TEN = Tenancy(tenants=(TenantQueue("a", "c", ((H, FlavorQuota(32)),), kueue=LOWER),),
              cohorts=(Cohort("c"),))


def kueue_with(placer) -> Profile:
    return Profile("kueue-custom", placer=placer, admitter=KueueAdmitter(), orderer=KueueOrder(),
                   preemptor=KueuePreemptor())


def running(name: str, node: int, age: float, priority: int = 0) -> RunningJob:
    """One 8-GPU pod of queue a on ``node``, admitted at NOW − ``age``."""
    j = with_flavor(replace(job("x").tenant("a").gpus(8).priority(priority).runs(90_000).build(),
                            id=name), H)
    ps = j.pod_sets[0]
    return RunningJob(j, NOW - age, (PodBinding(j.id, ps.name, 0, node, ps.request),))


def two_leaves(placer):
    """Leaf 0 = nodes 0, 1; leaf 1 = nodes 2, 3 (8 GPUs each). Queue a (nominal 32, alone in its
    cohort) runs v1 on node 0 (age 100 s), v2 on node 2 (200 s), v3 on node 1 (300 s), all
    priority 0, and ``keep`` on node 3 at priority 10. ``hi`` (priority 10, 2 × 8 GPUs, one leaf)
    is refused for quota: 32 + 16 > 32."""
    flt = fleet().leaves(2, nodes=2).build()
    run = [running("v1", 0, 100), running("v2", 2, 200), running("v3", 1, 300),
           running("keep", 3, 50, priority=10)]
    hi = replace(job("hi").tenant("a").gpus(8).gang(2).priority(10).build(), topology_required="leaf")
    table = NodeTable.from_fleet(flt)
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    return run_cycle(CycleInput(NOW, table, [PendingJob(hi)], kueue_with(placer), running=run,
                                tenancy=TEN))


def test_targets_free_a_whole_leaf_under_the_topology_placer():
    """Kueue's candidates (withinClusterQueue LowerPriority): v1, v2, v3, newest first. The walk:
    v1 frees 8 GPUs of quota (24 + 16 > 32: no); v1 + v2 free 16 (16 + 16 = 32: quota fits) on
    nodes 0 and 2, which the leaf rule refuses; v1 + v2 + v3 free leaf 0. Fill back from the
    second-to-last target: without v2, quota 32 − 16 + 16 = 32 fits and leaf 0 is still free, so
    v2 is spared; without v1, 32 − 8 + 16 = 40 > 32. Targets: v1 and v3. With fit_gang the search
    stopped at v1 + v2, and ``hi`` could not start on the room they freed."""
    r = two_leaves(TopologyAware())
    assert sorted(p.job for p in r.preemptions) == ["v1", "v3"]
    assert r.statuses["hi"].code is StatusCode.WAIT


def test_the_same_cycle_under_gang_best_fit_evicts_v1_and_v2():
    """The control: gang best fit may span leaves, so the walk stops at v1 + v2 and fill back
    keeps both (without v1: 40 > 32)."""
    r = two_leaves(GangBestFit())
    assert sorted(p.job for p in r.preemptions) == ["v1", "v2"]
