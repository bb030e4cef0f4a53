"""One workload's target search on the Plan (policies/kueue/search.py), asked directly.

Queue a (withinClusterQueue LowerPriority, nominal 16 of one flavor, alone in its cohort) runs v1
on node 0 (admitted 100 s ago) and v2 on node 1 (300 s ago), 8 GPUs each at priority 0, on two
8-GPU nodes. W asks 8 GPUs at priority 10: 16 + 8 > 16, so it needs a target.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleContext, RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, KueueQueuePolicy, Tenancy, TenantQueue
from gpufleet.policies.kueue.resources import ResourceLedger
from gpufleet.policies.kueue.search import TargetSearch
from gpufleet.policies.quota import QuotaLedger, with_flavor
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job

H = "H100-80GB"
NOW = 1_000.0
TEN = Tenancy(tenants=(TenantQueue("a", "c", ((H, FlavorQuota(16)),),
                                   kueue=KueueQueuePolicy(within_cluster_queue="LowerPriority")),),
              cohorts=(Cohort("c"),))


def running(name: str, node: int, age: float) -> RunningJob:
    j = with_flavor(replace(job("x").tenant("a").gpus(8).build(), id=name), H)
    ps = j.pod_sets[0]
    return RunningJob(j, NOW - age, (PodBinding(j.id, ps.name, 0, node, ps.request),))


def setup():
    run = [running("v1", 0, 100), running("v2", 1, 300)]
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    for rj in run:
        for b in rj.bindings:
            table.take(b.node, b.request)
    ctx = CycleContext(now=NOW, profile=profile("kueue"), rng=np.random.default_rng(0), running=run,
                       tenancy=TEN)
    w = with_flavor(job("w").tenant("a").gpus(8).priority(10).build(), H)
    plan = Plan(table)
    search = TargetSearch(w, H, plan, ctx, QuotaLedger.from_running(TEN, run),
                          {rj.job.id: rj for rj in run}, ResourceLedger.from_running(TEN, run))
    return search, plan


def test_without_victims_the_quota_refuses_before_the_nodes_are_asked():
    """16 used + 8 > 16 nominal, no cohort to borrow from: no fit, and the quota said so."""
    search, plan = setup()
    assert search.fits_without_victims() is None and not search.quota_ok
    assert plan.table.gpu_free.tolist() == [0, 0]


def test_the_newest_lower_priority_workload_is_the_target_and_w_is_placed_on_its_node():
    """Kueue's order for own-queue candidates: lower priority, then most recently admitted: v1
    first. Without v1, 8 + 8 = 16 fits the quota and node 0 has 8 free: one target, v1
    (InClusterQueue), W bound on node 0, the plan left with v1 released and v2 running."""
    search, plan = setup()
    found = search.targets()
    assert found is not None
    victims, bindings, why = found
    assert [v.job.id for v in victims] == ["v1"] and why == {"v1": "InClusterQueue"}
    assert [b.node for b in bindings] == [0]
    assert plan.table.gpu_free.tolist() == [8, 0]
