"""The idle-node arithmetic of raycluster.py's docstring, counted by the code."""

import pytest

from gpufleet.adapters.ray.mapping import Bundle, PlacementGroupSpec, Strategy
from gpufleet.adapters.ray.raycluster import RayClusterSpec, coordinated, uncoordinated
from gpufleet.engine.snapshot import NodeTable
from gpufleet.testing.builders import fleet


def table(nodes=4, gpus=8):
    return NodeTable.from_fleet(fleet().leaves(1, nodes=nodes, gpus=gpus).build())


def spread(name, bundles, gpus, worker_gpus):
    return RayClusterSpec(name, PlacementGroupSpec(name, (Bundle(gpus),) * bundles, Strategy.STRICT_SPREAD),
                          worker_gpus)


def test_two_autoscalers_interleaving_hold_the_whole_fleet_idle():
    """4 × 8 = 32 GPUs; A and B each want 3 workers × 8 GPUs. Interleaved: A1 B1 A2 B2 bound (4 × 8 =
    32 GPUs held), A3 and B3 wait; neither group is created: idle held = 32."""
    a, b = spread("a", 3, 8, 8), spread("b", 3, 8, 8)
    out = uncoordinated(table(), [a, b])
    assert [(o.workers, o.held_gpus, o.created) for o in out] == [(2, 16, False), (2, 16, False)]
    assert sum(o.idle_gpus for o in out) == 32


def test_gang_admitting_the_worker_group_leaves_nothing_held_idle():
    """Coordinated: A's 3 workers bound as one gang (24 GPUs, all used); B's 3 do not fit in the 8
    left, so B holds nothing. Idle held = 0; 32 − 24 = 8 GPUs free."""
    a, b = spread("a", 3, 8, 8), spread("b", 3, 8, 8)
    out = coordinated(table(), [a, b])
    assert [(o.workers, o.held_gpus, o.used_gpus) for o in out] == [(3, 24, 24), (0, 0, 0)]
    assert sum(o.idle_gpus for o in out) == 0


def test_workers_larger_than_bundles_hold_three_quarters_idle():
    """4 bundles × 2 GPUs, STRICT_SPREAD, 8-GPU worker template: 4 workers × 8 = 32 held, 8 used,
    24 idle (75%). Sized to the bundles: 4 × 2 = 8 held, 8 used, 0 idle."""
    c = spread("c", 4, 2, 8)
    (u,) = uncoordinated(table(), [c])
    assert (u.held_gpus, u.used_gpus, u.idle_gpus) == (32, 8, 24)
    (k,) = coordinated(table(), [c])
    assert (k.held_gpus, k.used_gpus, k.idle_gpus) == (8, 8, 0)


def test_pack_bundles_share_workers_first_fit_decreasing():
    """PACK of bundles 4, 4, 2, 2, 2 into 8-GPU workers: [4, 4], [2, 2, 2] → 2 workers."""
    pg = PlacementGroupSpec("p", tuple(Bundle(g) for g in (2, 4, 2, 4, 2)), Strategy.PACK)
    assert RayClusterSpec("p", pg, 8).workers_needed() == 2


def test_a_bundle_larger_than_the_worker_template_is_refused():
    with pytest.raises(ValueError, match="cannot fit a 4-GPU worker"):
        spread("x", 2, 8, 4).workers_needed()


def test_strict_pack_of_unequal_bundles_puts_every_bundle_on_one_node():
    """3 + 1 GPUs on 4-GPU nodes: one node holds both; 4 + 2 = 6 fits none and stays unplaced."""
    from gpufleet.adapters.ray.placement import engine_placement

    t = table(nodes=3, gpus=4)
    ours = engine_placement(PlacementGroupSpec("pg", (Bundle(3), Bundle(1)), Strategy.STRICT_PACK), t)
    assert ours.nodes is not None and len(set(ours.nodes)) == 1
    too_big = engine_placement(PlacementGroupSpec("pg", (Bundle(4), Bundle(2)), Strategy.STRICT_PACK), t)
    assert not too_big.placed and too_big.reason
