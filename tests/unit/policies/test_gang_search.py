"""The parts every gang placer is built from (policies/gang_search.py): a node filter that returns
a mask, a scorer that orders nodes, and one fill."""

from dataclasses import replace

import numpy as np

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable, contiguous_starts
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleInput, PendingJob
from gpufleet.model.job import PodRequest
from gpufleet.policies.filters import tightest_leaves
from gpufleet.policies.gang_search import fill_in_order
from gpufleet.policies.registry import profile
from gpufleet.policies.scorers import best_fit_order
from gpufleet.testing.builders import fleet, job


def table(used: dict[int, int]) -> NodeTable:
    """Two leaves of 3 nodes × 8 GPUs (nodes 0-2 and 3-5), with ``used`` GPUs taken per node."""
    plan = Plan(NodeTable.from_fleet(fleet().leaves(2, nodes=3).build()))
    for node, gpus in used.items():
        plan.bind(PodBinding("bg", "w", node, node, PodRequest(gpus)))
    return plan.table


def test_the_fill_gives_each_node_what_it_takes_until_the_gang_is_placed():
    """Slots 3, 0, 2, 5 in that order, 6 pods: 3 on the first, none on the second (skipped), 2 on
    the third, 6 − 3 − 2 = 1 on the fourth. Without the fourth only 5 fit: None."""
    slots = np.array([3, 0, 2, 5])
    assert fill_in_order(np.array([0, 1, 2, 3]), slots, 6) == [(0, 3), (2, 2), (3, 1)]
    assert fill_in_order(np.array([0, 2, 3]), slots, 6) == [(0, 3), (2, 2), (3, 1)]
    assert fill_in_order(np.array([0, 2]), slots, 6) is None


def test_best_fit_puts_the_fullest_nodes_first_and_breaks_ties_by_index_or_by_the_given_rank():
    """Free GPUs per node: 8, 2, 8, 2, 5, 8. Fewest free first: nodes 1 and 3 (2 free), node 4 (5),
    then 0, 2, 5 (8). With tie ranks reversing the index, 3 comes before 1 and 5, 2, 0 in turn."""
    t = table({1: 6, 3: 6, 4: 3})
    everyone = np.arange(len(t))
    assert best_fit_order(t, everyone).tolist() == [1, 3, 4, 0, 2, 5]
    assert best_fit_order(t, everyone, tie=np.arange(6)[::-1]).tolist() == [3, 1, 4, 5, 2, 0]


def test_the_leaf_filter_keeps_the_tightest_leaf_that_holds_the_whole_gang():
    """8-GPU pods: leaf 0 (nodes 0-2) has 2 whole nodes free (node 0 is full), leaf 1 (nodes
    3-5) has 3. A 2-pod gang fits both; the tightest (leaf 0, 2 slots) is kept: nodes 1 and 2,
    the ones with a slot. A 4-pod gang fits neither alone: the roomiest leaf (3) plus the next
    (2) are kept. The same answers when the table does not know its leaves are runs of nodes
    (the weighted count per leaf instead of the slice)."""
    t = table({0: 8})
    slots = t.slots(PodRequest(8))
    assert t.leaf_start is not None and t.leaf_start.tolist() == [0, 3]
    for view in (t, replace(t, leaf_start=None)):
        assert tightest_leaves(view, slots, 2).tolist() == [1, 2]
        assert tightest_leaves(view, slots, 4).tolist() == [1, 2, 3, 4, 5]


def test_a_leaf_whose_nodes_are_not_one_run_is_counted_by_leaf_not_by_run():
    """Leaves 0, 1, 0 in node order (a hand-built table): no run starts are kept, and the leaf
    rule counts leaf 0's slots over both of its runs — 1 + 1 = 2 holds a 2-pod gang, as leaf 1
    (2 slots, capped at the gang's size) does: on the tie the lower leaf, nodes 0 and 2."""
    t = NodeTable.from_fleet(fleet().leaves(1, nodes=3).build())
    t = replace(t, leaf_idx=np.array([0, 1, 0], np.int32), leaf_start=contiguous_starts(
        np.array([0, 1, 0], np.int32)))
    assert t.leaf_start is None
    slots = np.array([1, 2, 1])   # pods per node, capped at the gang's 2
    assert tightest_leaves(t, slots, 2).tolist() == [0, 2]



def test_the_empty_fleet_verdict_follows_a_node_that_stops_being_schedulable():
    """Two 8-GPU nodes hold a 2×8-GPU gang when empty: with one node's GPUs taken, a cycle says
    it does not fit now, never that it cannot fit. Once the other node is unschedulable the empty
    fleet holds only 1 pod, so the next cycle (same fleet columns, same request) must say
    UNRESOLVABLE: the empty-fleet answer remembered across cycles keys on which nodes are
    schedulable."""
    t = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    t.take(0, PodRequest(8))
    gang = job("g").gpus(8).gang(2).build()

    def status() -> Status:
        r = run_cycle(CycleInput(now=0.0, nodes=t, pending=[PendingJob(gang)],
                                 profile=profile("gang-bestfit")))
        return r.statuses["g"]

    assert status().code is StatusCode.UNSCHEDULABLE
    t.schedulable[1] = False
    after = status()
    assert after.code is StatusCode.UNRESOLVABLE
    assert "even an empty fleet holds only 1" in after.reasons[0]
