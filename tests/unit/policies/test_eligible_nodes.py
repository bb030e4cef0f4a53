"""The per-job node filter (``Job.eligible_nodes``) inside one engine run.

Fleet for every test: 2 leaves × 2 nodes × 8 GPUs, nodes g0-n0000 … g0-n0003 (leaf0 holds n0000
and n0001, leaf1 holds n0002 and n0003).
"""

from dataclasses import replace

import pytest

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet

FLEET = fleet().leaves(2, nodes=2).build()
N = [n.id for n in FLEET.nodes]


def gang(jid: str, replicas: int, gpus: int = 8, run: float = 600.0, submit: float = 0.0,
         eligible: set[int] | None = None) -> Job:
    return Job(jid, "t1", (PodSet("w", replicas, PodRequest(gpus)),), submit, run, run_time_estimate=run,
               eligible_nodes=None if eligible is None else frozenset(N[i] for i in eligible))


def busy(table: NodeTable, jid: str, node: int, ends: float) -> RunningJob:
    """A running 8-GPU job on ``node`` that ends (by estimate) at ``ends``."""
    table.take(node, PodRequest(8))
    j = Job(jid, "t1", (PodSet("w", 1, PodRequest(8)),), 0.0, ends, run_time_estimate=ends)
    return RunningJob(j, 0.0, (PodBinding(jid, "w", 0, node, PodRequest(8)),))


def test_a_job_is_reserved_on_its_only_eligible_node_while_others_backfill_elsewhere():
    """n0000 is busy until t=500 and n0002 until t=1000; n0001 and n0003 are free.

    A (first in the queue, 1 × 8 GPUs) may use n0002 only: nothing fits it now, and its one node
    frees at t=1000, so EASY reserves n0002 from t=1000 — not t=500 (n0000 frees first, but A
    may not use it) and not t=0 on a free node. B (1 × 8 GPUs, runs 2,000 s, any node) runs
    past t=1000, so it may backfill only where A's reservation does not need the GPUs: n0001 or
    n0003 (8 free each), and it starts now. C (1 × 8 GPUs, n0002 only) cannot start: its node
    is busy. Without the filter A would start now on a free node.
    """
    table = NodeTable.from_fleet(FLEET)
    running = [busy(table, "r0", 0, 500.0), busy(table, "r2", 2, 1000.0)]
    a = gang("A", 1, eligible={2})
    b = gang("B", 1, run=2000.0, submit=1.0)
    c = gang("C", 1, run=100.0, submit=2.0, eligible={2})
    res = run_cycle(CycleInput(0.0, table, [PendingJob(j) for j in (a, b, c)], profile("gang-easy"),
                               running=running))
    assert res.started == ("B",)
    assert {N[x.node] for x in res.bindings} <= {N[1], N[3]}
    (resv,) = [r for r in res.reservations if r.job == "A"]
    assert resv.start == pytest.approx(1000.0)
    assert [N[x.node] for x in resv.bindings] == [N[2]]
    assert res.statuses["A"].estimated_start == pytest.approx(1000.0)
    assert "C" not in res.started

    free_a = replace(a, eligible_nodes=None)
    res2 = run_cycle(CycleInput(0.0, table, [PendingJob(j) for j in (free_a, b)], profile("gang-easy"),
                                running=running))
    assert "A" in res2.started


@pytest.mark.parametrize("policy", ["gang-bestfit", "topology-aware", "gang-fractional", "topology-blind"])
def test_a_gang_larger_than_its_eligible_nodes_is_unresolvable_and_says_why(policy):
    """2 pods × 8 GPUs may use n0000 only: an empty n0000 holds 8 / 8 = 1 pod < 2, so the job
    can never run — UNRESOLVABLE, naming the one eligible node — though the fleet holds 4."""
    res = run_cycle(CycleInput(0.0, NodeTable.from_fleet(FLEET), [PendingJob(gang("A", 2, eligible={0}))],
                               profile(policy)))
    st = res.statuses["A"]
    assert st.code is StatusCode.UNRESOLVABLE
    assert "holds only 1" in st.reasons[0] and "1 schedulable node(s) it is eligible for" in st.reasons[0]


def test_a_restricted_jobs_failure_does_not_rule_out_an_unrestricted_job_of_the_same_shape():
    """n0000–n0002 are full; A (1 × 8 GPUs, n0000–n0002 only) cannot fit, B (same shape, any
    node) fits on n0003 — the shape-class memo must not carry A's failure over to B."""
    table = NodeTable.from_fleet(FLEET)
    running = [busy(table, f"r{i}", i, 900.0) for i in range(3)]
    a = gang("A", 1, eligible={0, 1, 2})
    b = gang("B", 1, submit=1.0)
    res = run_cycle(CycleInput(0.0, table, [PendingJob(a), PendingJob(b)], profile("gang-bestfit"),
                               running=running))
    assert res.started == ("B",)
    assert [N[x.node] for x in res.bindings] == [N[3]]


def test_per_pod_scheduling_binds_each_pod_inside_its_jobs_eligible_nodes():
    """Least-allocated spreads 4 × 2-GPU pods over the emptiest nodes; with n0002 and n0003
    eligible the four pods go 2 + 2 onto those two nodes (each 8 GPUs, 4 taken) and none
    onto n0000 or n0001, which are emptier after the first two pods."""
    a = gang("A", 4, 2, eligible={2, 3})
    res = run_cycle(CycleInput(0.0, NodeTable.from_fleet(FLEET), [PendingJob(a)], profile("per-pod")))
    assert res.started == ("A",)
    assert sorted(N[b.node] for b in res.bindings) == [N[2], N[2], N[3], N[3]]


def test_a_beneficiary_restricted_to_one_node_evicts_only_the_job_on_that_node():
    """6 nodes × 8 GPUs; tenants a and b have 24 nominal GPUs each in one cohort. b runs six
    8-GPU jobs, one per node (24 nominal + 24 borrowed), started at 0, 100, …, 500 s. a submits
    one 8-GPU job (within its 24) that may use n0000 only. The cheapest victim by work lost is
    b5 (started last), but freeing n0005 frees a nothing: exactly one notice, for b0 on n0000."""
    from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue
    from gpufleet.policies.quota import with_flavor

    f = fleet().leaves(1, nodes=6).build()
    names = [n.id for n in f.nodes]
    table = NodeTable.from_fleet(f)
    running = []
    for i in range(6):
        j = with_flavor(Job(f"b{i}", "b", (PodSet("w", 1, PodRequest(8)),), 0.0, 90_000.0), "H100-80GB")
        table.take(i, j.pod_sets[0].request)
        running.append(RunningJob(j, 100.0 * i, (PodBinding(j.id, "w", 0, i, j.pod_sets[0].request),)))
    q = (("H100-80GB", FlavorQuota(24)),)
    ten = Tenancy(tenants=(TenantQueue("a", "c", q), TenantQueue("b", "c", q)), cohorts=(Cohort("c"),))
    a = Job("a0", "a", (PodSet("w", 1, PodRequest(8)),), 0.0, 600.0, eligible_nodes=frozenset({names[0]}))
    for policy in ("tenancy", "tenancy-naive-victims"):
        res = run_cycle(CycleInput(10_000.0, table, [PendingJob(a)], profile(policy), running=running,
                                   tenancy=ten))
        assert [(p.job, p.for_job) for p in res.preemptions] == [("b0", "a0")], policy


def test_free_gpus_only_on_nodes_no_waiting_job_may_use_count_as_stranded():
    """n0000–n0002 full, n0003 has 8 free GPUs. A waiting 8-GPU job that may use n0000 only
    fits nowhere it may go, so n0003's 8 free GPUs are stranded; one that may use any node
    could take them: 0 stranded."""
    from gpufleet.sim.step import stranded_gpus

    table = NodeTable.from_fleet(FLEET)
    for i in range(3):
        table.take(i, PodRequest(8))
    assert stranded_gpus(table, [gang("A", 1, eligible={0})]) == 8
    assert stranded_gpus(table, [gang("A", 1)]) == 0


@pytest.mark.parametrize("policy", ["gang-bestfit", "topology-aware", "gang-easy"])
def test_the_empty_fleet_verdict_of_a_restricted_job_is_not_reused_for_an_unrestricted_one(policy):
    """A (2 × 8 GPUs, n0000 only) can never run: one eligible node holds 1 pod. B, the same
    shape on any node, arrives behind it in the same cycle: the empty-fleet answer cached for
    A's shape must not be B's (the fleet holds 4 such pods), so B starts."""
    a = gang("A", 2, eligible={0})
    b = gang("B", 2, submit=1.0)
    res = run_cycle(CycleInput(0.0, NodeTable.from_fleet(FLEET), [PendingJob(a), PendingJob(b)],
                               profile(policy)))
    assert res.statuses["A"].code is StatusCode.UNRESOLVABLE
    assert res.started == ("B",)
