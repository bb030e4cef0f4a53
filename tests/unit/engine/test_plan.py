import dataclasses

import pytest

from gpufleet.engine.gpu_state import GpuSlot
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.job import PodRequest
from gpufleet.sim.fragmentation import free_gpu_equivalents
from gpufleet.testing.builders import fleet


def test_rollback_restores_free_capacity_exactly():
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    plan = Plan(table)
    req = PodRequest(4, 10, 100)
    plan.bind(PodBinding("a", "w", 0, 0, req))
    mark = plan.checkpoint()
    plan.bind(PodBinding("b", "w", 0, 0, req))
    plan.release(1, PodRequest(0, 0, 0))
    plan.rollback(mark)
    assert plan.table.gpu_free.tolist() == [4, 8]
    assert plan.table.cpu_free.tolist() == [214, 224]
    assert [b.job for b in plan.commit()] == ["a"]


# Fractional pods (soft shares, MIG) hold a share of ONE GPU, found through the binding's slot. The
# measure below is the fleet's free GPU equivalents on node 0: 8 GPUs, minus 0.25 while a 250-milli
# share sits on GPU 0, i.e. 7.75 held and 8.0 free.
SHARE = PodRequest(0, cpus=4, gpu_milli=250)


def _free_gpus_on_node_0(plan: Plan) -> float:
    return float(free_gpu_equivalents(plan.table)[0])


def _share_plan() -> tuple[Plan, PodBinding]:
    plan = Plan(NodeTable.from_fleet(fleet().leaves(1, nodes=2).build()))
    binding = PodBinding("s", "w", 0, 0, SHARE, GpuSlot(0, tenant="t"))
    return plan, binding


def test_releasing_a_fractional_binding_frees_its_gpu_share():
    plan, b = _share_plan()
    plan.bind(b)
    assert _free_gpus_on_node_0(plan) == pytest.approx(7.75)
    plan.release_binding(b)
    assert _free_gpus_on_node_0(plan) == pytest.approx(8.0)
    assert plan.table.cpu_free[0] == plan.table.cpu_total[0]


def test_rolling_back_a_fractional_binding_frees_its_gpu_share():
    plan, b = _share_plan()
    mark = plan.checkpoint()
    plan.bind(b)
    plan.rollback(mark)
    assert _free_gpus_on_node_0(plan) == pytest.approx(8.0)
    assert plan.commit() == ()


def test_rolling_back_the_release_of_a_fractional_binding_holds_its_share_again():
    """A preemption what-if frees a victim's share, then undoes it: the share is held again
    (7.75 free) and so is its CPU (4 of the node's CPUs)."""
    plan, b = _share_plan()
    plan.bind(b)
    mark = plan.checkpoint()
    plan.release_binding(b)
    assert _free_gpus_on_node_0(plan) == pytest.approx(8.0)
    plan.rollback(mark)
    assert _free_gpus_on_node_0(plan) == pytest.approx(7.75)
    assert plan.table.cpu_total[0] - plan.table.cpu_free[0] == 4


def test_a_fractional_pod_released_without_its_slot_frees_its_cpu_but_not_its_gpu_share():
    """`release` without a slot is the CPU/memory-only what-if its docstring names: the 4 CPUs
    come back, the 0.25 GPU share stays held (7.75 free)."""
    plan, b = _share_plan()
    plan.bind(b)
    plan.release(0, SHARE)
    assert plan.table.cpu_free[0] == plan.table.cpu_total[0]
    assert _free_gpus_on_node_0(plan) == pytest.approx(7.75)


def test_committed_decisions_cannot_be_altered_afterwards():
    plan, b = _share_plan()
    plan.bind(b)
    (decision,) = plan.commit()
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.node = 1  # type: ignore[misc]


def test_a_fractional_binding_without_a_slot_holds_cpu_only():
    """A binding with no slot says "no GPU chosen yet": it holds its 4 CPUs and no GPU share (8.0 free)."""
    plan, _ = _share_plan()
    plan.bind(PodBinding("s", "w", 0, 0, SHARE))
    assert plan.table.cpu_total[0] - plan.table.cpu_free[0] == 4
    assert _free_gpus_on_node_0(plan) == pytest.approx(8.0)
