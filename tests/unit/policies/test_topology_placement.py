"""Topology-aware placement: TP groups in NVLink domains, pipelines together, levels, wait-or-start."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob, PlaceCaches, RunningJob
from gpufleet.model.job import Job, PodRequest
from gpufleet.model.parallelism import LLAMA_70B, Parallelism
from gpufleet.policies.registry import profile
from gpufleet.policies.topology import TopologyAware, TopologyCaches, pipeline_order
from gpufleet.policies.topology_blind import TopologyBlind
from gpufleet.testing.builders import fleet, job


def table_with(used: dict[int, int], builder=None) -> NodeTable:
    t = NodeTable.from_fleet((builder or fleet().leaves(2, nodes=4)).build())
    plan = Plan(t)
    for node, gpus in used.items():
        plan.bind(PodBinding("bg", "w", node, node, PodRequest(gpus)))
    return plan.table


def ctx(now: float = 0.0, running: tuple[RunningJob, ...] = ()) -> CycleContext:
    return CycleContext(now=now, profile=profile("topology-aware"), rng=np.random.default_rng(0),
                        running=running)


def training(name: str, pod_gpus: int, pods: int, par: Parallelism, *, hours: float = 10.0,
             required: str | None = None, profile_=LLAMA_70B) -> Job:
    base = job(name).gpus(pod_gpus).gang(pods).runs(hours * 3600).build()
    return replace(base, parallelism=par, training=profile_, topology_required=required)


def nodes_of(fitted) -> list[int]:
    assert not isinstance(fitted, Status), fitted
    assert [b.replica for b in fitted] == list(range(len(fitted))), "bindings must be in rank order"
    return [b.node for b in fitted]


# ---- TP groups stay in NVLink domains -------------------------------------------------------------


def test_a_tp8_job_in_two_4_gpu_pods_takes_a_whole_node_rather_than_two_half_free_ones():
    t = table_with({0: 4, 1: 4})  # nodes 0 and 1 have 4 free GPUs each; 2..7 are empty
    placed = nodes_of(TopologyAware().fit(training("a", 4, 2, Parallelism(8)), t, ctx()))
    assert len(set(placed)) == 1 and placed[0] not in (0, 1)


def test_the_blind_baseline_splits_the_same_job_four_and_four():
    t = table_with({0: 4, 1: 4})
    placed = nodes_of(TopologyBlind().fit(training("a", 4, 2, Parallelism(8)), t, ctx()))
    assert sorted(placed) == [0, 1]


def test_a_tp8_job_of_one_gpu_pods_keeps_each_tp_group_on_one_node():
    t = table_with({})
    placed = nodes_of(TopologyAware().fit(training("a", 1, 16, Parallelism(8, dp=2)), t, ctx()))
    groups = np.array(placed).reshape(2, 8)
    assert all(len(set(g)) == 1 for g in groups)


def test_pipeline_stages_of_one_replica_share_a_leaf_when_the_job_spans_leaves():
    # Leaf 0 and leaf 1 have two free nodes each: a 4-node job must span both leaves.
    t = table_with({0: 8, 1: 8, 4: 8, 5: 8})
    placed = nodes_of(TopologyAware().fit(training("a", 8, 4, Parallelism(8, pp=2, dp=2)), t, ctx()))
    leaf = t.leaf_idx[placed]
    # Megatron order: pod 0 = (replica 0, stage 0), 1 = (1, 0), 2 = (0, 1), 3 = (1, 1).
    assert leaf[0] == leaf[2] and leaf[1] == leaf[3] and leaf[0] != leaf[1]


def test_pipeline_order_lists_each_pipelines_stages_together():
    # 4 atoms: stage 0 holds atoms 0, 1 (replicas 0, 1); stage 1 holds atoms 2, 3.
    assert pipeline_order(4, 8, tp=8, cp=1, dp=2, pp=2).tolist() == [0, 2, 1, 3]
    assert pipeline_order(4, 8, tp=8, cp=1, dp=4, pp=1).tolist() == [0, 1, 2, 3]


def test_a_gang_that_fits_one_leaf_stays_in_the_tightest_leaf():
    t = table_with({0: 8, 1: 8})  # leaf 0 has 2 empty nodes, leaf 1 has 4
    placed = nodes_of(TopologyAware().fit(job("a").gpus(8).gang(2).build(), t, ctx()))
    assert set(t.leaf_idx[placed].tolist()) == {0}


# ---- NVL72: NVLink domains of 18 nodes ------------------------------------------------------------


def test_on_nvl72_a_tp16_job_in_4_gpu_pods_stays_inside_one_rack():
    t = table_with({i: 4 for i in range(16)}, fleet().nvl72(racks=2))  # rack 0 keeps 2 free trays
    placed = nodes_of(TopologyAware().fit(training("a", 4, 4, Parallelism(16)), t, ctx()))
    assert len(set(t.domain_idx[placed].tolist())) == 1
    assert t.domain_idx[placed[0]] == 1


def test_on_nvl72_a_tp8_job_spans_two_trays_of_one_rack_at_no_slowdown():
    t = table_with({}, fleet().nvl72(racks=1))
    aware = TopologyAware()
    j = training("a", 4, 2, Parallelism(8))
    placed = np.array(nodes_of(aware.fit(j, t, ctx())))
    assert aware.slowdown(j, placed, t) == pytest.approx(1.0)


# ---- required and preferred levels -----------------------------------------------------------------


def test_a_job_required_in_one_leaf_waits_when_only_two_leaves_together_hold_it():
    t = table_with({0: 8, 1: 8, 4: 8, 5: 8})
    st = TopologyAware().fit(replace(job("a").gpus(8).gang(3).build(), topology_required="leaf"), t, ctx())
    assert isinstance(st, Status) and st.code is StatusCode.UNSCHEDULABLE
    assert "the roomiest leaf holds 2 of its 3 pods" in st.explain()


def test_a_required_level_no_empty_group_can_hold_is_unresolvable():
    t = table_with({})
    st = TopologyAware().fit(replace(job("a").gpus(8).gang(5).build(), topology_required="leaf"), t, ctx())
    assert isinstance(st, Status) and st.code is StatusCode.UNRESOLVABLE


def test_an_unconstrained_job_is_not_held_back_by_a_constrained_one_of_the_same_shape():
    t = table_with({0: 8, 1: 8, 4: 8, 5: 8})
    leafy = replace(job("a").gpus(8).gang(3).build(), topology_required="leaf")
    free = job("b").gpus(8).gang(3).at(1).build()
    plan = Plan(t)
    c = ctx()
    out = TopologyAware().place([PendingJob(leafy), PendingJob(free)], plan, c)
    assert out.started == ["b"] and c.statuses["a"].code is StatusCode.UNSCHEDULABLE


# ---- wait or start ---------------------------------------------------------------------------------


def half_full_fleet(ends_in_s: float) -> tuple[NodeTable, tuple[RunningJob, ...]]:
    """Two nodes, each half used by a job that is expected to end ``ends_in_s`` from now."""
    t = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    plan = Plan(t)
    running = []
    for n in (0, 1):
        j = job(f"bg{n}").gpus(4).runs(ends_in_s).build()
        b = PodBinding(j.id, "worker", 0, n, PodRequest(4))
        plan.bind(b)
        running.append(RunningJob(j, 0.0, (b,)))
    return plan.table, tuple(running)


def test_a_long_tp8_job_waits_for_a_whole_node_when_the_wait_costs_less_than_the_slowdown():
    t, running = half_full_fleet(ends_in_s=600)
    st = TopologyAware().fit(training("a", 4, 2, Parallelism(8), hours=10), t, ctx(running=running))
    assert isinstance(st, Status) and st.code is StatusCode.WAIT
    text = st.explain()
    assert "start now" in text and "slowdown 2.34x, done in 23.4 h" in text
    assert "wait — TP groups whole in NVLink domains: starts in 10.0 min" in text
    assert "choice: wait (waiting 10.0 min costs less than the slowdown's 13.4 h)" in text
    assert st.estimated_start == pytest.approx(600)


def test_a_tp8_job_starts_split_when_the_wait_costs_more_than_the_slowdown():
    t, running = half_full_fleet(ends_in_s=20 * 3600)
    fitted = TopologyAware().fit(training("a", 4, 2, Parallelism(8), hours=1), t, ctx(running=running))
    assert sorted(nodes_of(fitted)) == [0, 1]


def test_a_job_that_has_waited_past_the_bound_starts_split():
    t, running = half_full_fleet(ends_in_s=600)
    aware = TopologyAware(max_wait_s=3600)
    fitted = aware.fit(training("a", 4, 2, Parallelism(8), hours=10), t, ctx(now=4000, running=running))
    assert sorted(nodes_of(fitted)) == [0, 1]
    decision = aware.decide(training("a", 4, 2, Parallelism(8), hours=10), np.array([0, 1]), t,
                            ctx(now=4000, running=running), k=2, level="fleet")
    assert decision is not None and decision.choice == "start" and "bound" in decision.why


def test_a_parallel_job_without_a_training_profile_is_never_split():
    t, running = half_full_fleet(ends_in_s=20 * 3600)
    j = replace(training("a", 4, 2, Parallelism(8)), training=None)
    st = TopologyAware().fit(j, t, ctx(running=running))
    assert isinstance(st, Status) and st.code is StatusCode.WAIT and "cannot be priced" in st.explain()


# ---- the expected wait is per table ----------------------------------------------------------------


def test_the_expected_wait_is_recomputed_when_the_table_it_reads_changes():
    """Two 8-GPU nodes. ``r0`` holds 4 GPUs of node 0 until t = 50 s, ``r1`` all of node 1 until
    t = 100 s. A 1 × 8-GPU job on the table with node 0 half free fits once r0 ends: 4 + 4 = 8 at
    50 s. After this cycle binds 4 more GPUs on node 0, r0's end leaves 0 + 4 = 4 there, so the
    first fit is node 1 at 100 s. A per-cycle cache that ignores the table answers 50 s twice."""
    t = table_with({0: 4, 1: 8}, fleet().leaves(1, nodes=2))
    r0 = RunningJob(job("r0").gpus(4).runs(50).build(), 0.0,
                    (PodBinding("r0", "w", 0, 0, PodRequest(4)),))
    r1 = RunningJob(job("r1").gpus(8).runs(100).build(), 0.0,
                    (PodBinding("r1", "w", 0, 1, PodRequest(8)),))
    c = ctx(0.0, (r0, r1))
    j = job("j").gpus(8).build()
    placer = TopologyAware()
    assert placer.expected_wait(j, t, c, 1, "node", 1000.0) == 50.0
    later = Plan(t)
    later.bind(PodBinding("x", "w", 0, 0, PodRequest(4)))
    assert placer.expected_wait(j, later.table, c, 1, "node", 1000.0) == 100.0


def test_the_wait_memo_is_the_topology_placers_own_state_for_one_cycle():
    """The memo lives in the placer's ``TopologyCaches`` (engine/types.py has no field of it): one
    entry after one question, the same object for the rest of the cycle, none in the next cycle's
    context."""
    fields = set(PlaceCaches.__dataclass_fields__)
    assert not {"expected_wait", "empty_group_room", "running_releases"} & fields
    t = table_with({0: 4, 1: 8}, fleet().leaves(1, nodes=2))
    c = ctx(0.0)
    TopologyAware().expected_wait(job("j").gpus(8).build(), t, c, 1, "node", 1000.0)
    mine = c.caches.owned(TopologyCaches)
    assert len(mine.expected_wait) == 1 and c.caches.owned(TopologyCaches) is mine
    assert ctx(0.0).caches.owned(TopologyCaches).expected_wait == {}
