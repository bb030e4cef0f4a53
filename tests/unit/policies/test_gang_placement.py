"""Gang best-fit: one leaf when possible, the tightest leaf, partly used nodes first."""

from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.job import PodRequest
from gpufleet.policies.gang import choose_nodes
from gpufleet.testing.builders import fleet


def table_with(used: dict[int, int], leaves=2, nodes=4):
    t = NodeTable.from_fleet(fleet().leaves(leaves, nodes=nodes).build())
    plan = Plan(t)
    for node, gpus in used.items():
        plan.bind(PodBinding("bg", "w", node, node, PodRequest(gpus)))
    return plan.table


def test_a_gang_that_fits_in_one_leaf_stays_in_one_leaf():
    t = table_with({0: 8, 1: 8})  # leaf 0 has 2 free nodes, leaf 1 has 4
    chosen = choose_nodes(t, PodRequest(8), 3)
    assert {int(t.leaf_idx[n]) for n, _ in chosen} == {1}


def test_the_tightest_leaf_that_holds_the_gang_is_chosen():
    t = table_with({0: 8, 1: 8})
    chosen = choose_nodes(t, PodRequest(8), 2)
    assert {int(t.leaf_idx[n]) for n, _ in chosen} == {0}


def test_a_gang_too_big_for_any_leaf_spans_the_fewest_leaves():
    t = table_with({}, leaves=3, nodes=2)
    chosen = choose_nodes(t, PodRequest(8), 4)
    assert len({int(t.leaf_idx[n]) for n, _ in chosen}) == 2


def test_partly_used_nodes_fill_before_empty_ones():
    t = table_with({2: 6}, leaves=1)
    chosen = choose_nodes(t, PodRequest(2), 1)
    assert chosen == [(2, 1)]


def test_small_pods_share_a_node():
    t = table_with({}, leaves=1, nodes=2)
    assert choose_nodes(t, PodRequest(2), 4) == [(0, 4)]


def test_a_gang_that_does_not_fit_gets_none():
    t = table_with({0: 8, 1: 8, 2: 8}, leaves=1)
    assert choose_nodes(t, PodRequest(8), 2) is None
