"""Ray's placement groups on a real local Ray cluster vs our engine's placement of the same gang.

The cluster (conftest.ray_cluster): Ray nodes r0, r1, r2 with 4 declared GPUs each. Our fleet: three
nodes of 4 GPUs, node i standing for r<i>. Each case creates the group in Ray, reads back the node of
every bundle (``placement_group_table``), removes it, and asks ``run_cycle`` for the same gang.
Which node of several equal ones each picks is each scheduler's tie-break; what a strategy
promises — the number of nodes and the bundles per node, or that the group cannot be placed — is
what must agree.
"""

import pytest

from gpufleet.adapters.ray.live import ray_placement
from gpufleet.adapters.ray.mapping import Bundle, PlacementGroupSpec, Strategy
from gpufleet.adapters.ray.placement import engine_placement
from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.job import PodRequest
from gpufleet.testing.builders import fleet

pytestmark = pytest.mark.ray
#: Ray frees a removed group's GPUs in the background, so the next group may wait for them; a group
#: that will be placed returns as soon as it is, and one that cannot stays PENDING after 2 s anyway.
PLACED_WITHIN_S = 60.0


def our_table(used: dict[int, int] | None = None) -> NodeTable:
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=3, gpus=4).build())
    for node, gpus in (used or {}).items():
        table.take(node, PodRequest(gpus))
    return table


def shape(nodes) -> tuple[int, ...]:
    return () if nodes is None else tuple(sorted((nodes.count(n) for n in set(nodes)), reverse=True))


CASES = [
    # strategy, bundles (GPUs each), bundles per node both must give (() = cannot be placed)
    (Strategy.STRICT_PACK, [2, 2], (2,)),
    (Strategy.STRICT_PACK, [2, 2, 2], ()),  # 6 GPUs > 4 on any node
    (Strategy.PACK, [2, 2], (2,)),
    (Strategy.PACK, [1, 1, 1, 1], (4,)),
    (Strategy.STRICT_SPREAD, [2, 2, 2], (1, 1, 1)),
    (Strategy.STRICT_SPREAD, [1, 1, 1, 1], ()),  # 4 bundles, 3 nodes
    (Strategy.SPREAD, [4, 4, 4], (1, 1, 1)),  # only one way to fit
    (Strategy.PACK, [4, 4, 4, 4], ()),  # 16 GPUs > 12
]


@pytest.mark.parametrize("strategy, gpus, expected", CASES, ids=[
    "strict pack of 2x2 GPUs lands on one node", "strict pack of 6 GPUs on 4-GPU nodes is pending",
    "pack of 2x2 GPUs lands on one node", "pack of 4x1 GPUs fills one node",
    "strict spread of 3 bundles takes all 3 nodes", "strict spread of 4 bundles on 3 nodes is pending",
    "spread of 3 whole nodes takes all 3", "pack of more GPUs than the cluster has is pending"])
def test_ray_and_our_engine_give_a_placement_group_the_same_shape(ray_cluster, strategy, gpus, expected):
    pg = PlacementGroupSpec("pg", tuple(Bundle(g) for g in gpus), strategy)
    ray_nodes, _ = ray_placement(pg, ray_cluster.node_names, timeout_s=PLACED_WITHIN_S if expected else 2.0)
    ours = engine_placement(pg, our_table())
    assert shape(ray_nodes) == expected
    assert ours.shape() == expected
    assert ours.placed == bool(expected)
    if not expected:
        assert ours.reason  # the engine says why


def test_with_a_node_mostly_used_both_avoid_it_for_a_strict_pack(ray_cluster):
    """r0 holds a 3-GPU group (pinned there by its tag): 1 GPU free on r0, 4 on r1 and r2. A strict
    pack of 2 × 2 GPUs needs 4 GPUs on one node: r1 or r2 for both schedulers, never r0."""
    from ray.util.placement_group import placement_group, remove_placement_group

    filler = placement_group([{"GPU": 3, "gpufleet-node:r0": 0.001}], strategy="STRICT_PACK")
    assert filler.wait(PLACED_WITHIN_S)
    try:
        pg = PlacementGroupSpec("pg", (Bundle(2), Bundle(2)), Strategy.STRICT_PACK)
        ray_nodes, _ = ray_placement(pg, ray_cluster.node_names, timeout_s=PLACED_WITHIN_S)
        ours = engine_placement(pg, our_table({0: 3}))
    finally:
        remove_placement_group(filler)
    assert ray_nodes is not None and len(set(ray_nodes)) == 1 and ray_nodes[0] in ("r1", "r2")
    assert ours.nodes is not None and len(set(ours.nodes)) == 1 and ours.nodes[0] in (1, 2)


def test_a_pack_that_no_longer_fits_one_node_splits_in_both(ray_cluster):
    """r0 and r1 each hold 3 GPUs: free 1, 1, 4. PACK of 3 × 2 GPUs (6) cannot share one node: both
    put two bundles on r2 (4 GPUs) — then the third bundle (2 GPUs) fits nowhere (1 free on r0 and
    r1): pending in both. Best effort still never breaks a bundle."""
    from ray.util.placement_group import placement_group, remove_placement_group

    fillers = [placement_group([{"GPU": 3, f"gpufleet-node:r{i}": 0.001}], strategy="STRICT_PACK")
               for i in (0, 1)]
    assert all(f.wait(PLACED_WITHIN_S) for f in fillers)
    try:
        pg = PlacementGroupSpec("pg", (Bundle(2),) * 3, Strategy.PACK)
        ray_nodes, _ = ray_placement(pg, ray_cluster.node_names, timeout_s=2.0)
        ours = engine_placement(pg, our_table({0: 3, 1: 3}))
    finally:
        for f in fillers:
            remove_placement_group(f)
    assert ray_nodes is None
    assert not ours.placed

