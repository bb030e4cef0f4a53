"""Several beneficiaries in one cycle: each gets its own victims, nobody's are counted twice.

The fleet is 6 nodes × 8 GPUs = 48 GPUs; tenants a and b have 24 nominal each in cohort c.
b runs six 8-GPU jobs (24 nominal + 24 borrowed) and a, holding nothing, submits k 8-GPU jobs,
each within a's nominal 24 (k × 8 ≤ 24 for k ≤ 3). Each of a's jobs needs one whole node, so
exactly k of b's jobs must be noticed, all in the first cycle, each for a different job of a.
"""

from dataclasses import replace

import numpy as np
import pytest

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
from gpufleet.policies.quota import with_flavor
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.sim.usage import UsageTracker
from gpufleet.testing.builders import fleet, job

F = "H100-80GB"
NODES = 6


def tenancy(grace: float = 0.0) -> Tenancy:
    q = ((F, FlavorQuota(24)),)
    return Tenancy(tenants=(TenantQueue("a", "c", q), TenantQueue("b", "c", q)),
                   cohorts=(Cohort("c"),), grace_s=grace)


def b_running() -> list[RunningJob]:
    out = []
    for i in range(NODES):
        j = replace(job("x").tenant("b").gpus(8).runs(90_000).build(), id=f"b{i}")
        jj = with_flavor(j, F)
        ps = jj.pod_sets[0]
        out.append(RunningJob(jj, 100.0 * i, (PodBinding(j.id, ps.name, 0, i, ps.request),)))
    return out


def one_cycle(k: int, policy: str = "tenancy"):
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=NODES).build())
    running = b_running()
    for rj in running:
        for b in rj.bindings:
            table.take(b.node, b.request)
    pending = [PendingJob(job(f"a{i}").tenant("a").gpus(8).build()) for i in range(k)]
    return run_cycle(CycleInput(10_000.0, table, pending, profile(policy), running=running,
                                tenancy=tenancy()))


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("policy", ["tenancy", "tenancy-easy", "tenancy-naive-victims"])
def test_k_blocked_jobs_within_quota_get_exactly_k_victims_in_one_cycle(k, policy):
    r = one_cycle(k, policy)
    assert len(r.preemptions) == k
    assert sorted(p.for_job for p in r.preemptions) == [f"a{i}" for i in range(k)]
    assert len({p.job for p in r.preemptions}) == k
    assert r.bindings == () and r.started == ()


def test_the_simulator_sends_two_notices_for_two_8_gpu_jobs_not_three():
    """Replayed in the simulator with a 30 s grace: two notices (8 + 8 = 16 GPUs for 16 asked),
    both at a's arrival t = 1,000, and both of a's jobs start at 1,000 + 30."""
    b = [job(f"b{i}").tenant("b").gpus(8).runs(90_000).checkpoints(600, 0, 30).build()
         for i in range(NODES)]
    a = [job(f"a{i}").tenant("a").gpus(8).at(1_000).runs(600).build() for i in range(2)]
    r = simulate(fleet().leaves(1, nodes=NODES).build(), [*b, *a], profile("tenancy"),
                 tenancy=tenancy(30.0), usage_tracker=UsageTracker(3600))
    notices = [(t, jid) for t, kind, jid, _ in r.recorder.log if kind == "preempt-notice"]
    assert len(notices) == 2
    assert {t for t, _ in notices} == {1_000.0}
    assert r.starts["a0"] == r.starts["a1"] == 1_030.0


def test_no_node_of_the_plan_goes_negative_while_victims_are_searched(monkeypatch):
    """Every state the preemptor's Plan passes through (seen before each rollback) has each
    node's free GPUs in [0, 8]: no beneficiary is bound on GPUs its victims still hold."""
    seen: list[np.ndarray] = []
    real_rollback = Plan.rollback

    def spy(self, mark):
        seen.append(self.table.gpu_free.copy())
        real_rollback(self, mark)

    monkeypatch.setattr(Plan, "rollback", spy)
    one_cycle(3)
    assert seen and all((s >= 0).all() and (s <= 8).all() for s in seen)
