"""Placement groups as gangs: the mapping, and hypothesis invariants of the engine's placement."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.adapters.ray.mapping import Bundle, PlacementGroupSpec, Strategy, bundle_index, to_job
from gpufleet.adapters.ray.placement import engine_placement
from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.job import PodRequest
from gpufleet.testing.builders import fleet


def test_a_ray_bundle_reads_gpus_cpus_and_memory_in_bytes():
    """memory 2 GiB = 2 × 2^30 bytes → 2.0 GB."""
    assert Bundle.from_ray({"GPU": 2, "CPU": 4, "memory": 2 * 2**30}) == Bundle(2, 4.0, 2.0)
    assert Bundle(2, 4.0, 2.0).to_ray() == {"GPU": 2, "CPU": 4.0, "memory": 2 * 2**30}


@pytest.mark.parametrize("resources, says", [({"GPU": 0.5}, "fractional"), ({"TPU": 1}, "TPU")],
                         ids=["a fractional GPU", "an unknown resource"])
def test_bundles_without_a_counterpart_are_refused(resources, says):
    with pytest.raises(ValueError, match=says):
        Bundle.from_ray(resources)


def test_runs_of_equal_bundles_become_pod_sets_and_map_back_to_bundle_numbers():
    """Bundles 4, 4, 2, 4 → pod sets bundle-0 (2 × 4), bundle-1 (1 × 2), bundle-2 (1 × 4)."""
    pg = PlacementGroupSpec("pg", (Bundle(4), Bundle(4), Bundle(2), Bundle(4)), Strategy.PACK)
    job = to_job(pg)
    assert [(ps.name, ps.replicas, ps.request.gpus) for ps in job.pod_sets] == [
        ("bundle-0", 2, 4), ("bundle-1", 1, 2), ("bundle-2", 1, 4)]
    assert [bundle_index(pg, ps.name, r) for ps in job.pod_sets for r in range(ps.replicas)] == [0, 1, 2, 3]
    assert job.topology_preferred == "node"


def test_strict_pack_is_one_pod_of_the_bundles_sum():
    job = to_job(PlacementGroupSpec("pg", (Bundle(3, 2), Bundle(1, 6)), Strategy.STRICT_PACK))
    assert [(ps.replicas, ps.request.gpus, ps.request.cpus) for ps in job.pod_sets] == [(1, 4, 8.0)]


pgs = st.builds(lambda gpus, n, s: PlacementGroupSpec("pg", (Bundle(gpus),) * n, s),
                st.sampled_from([1, 2, 4]), st.integers(1, 5), st.sampled_from(list(Strategy)))


@settings(max_examples=60, deadline=None)
@given(pg=pgs, used=st.lists(st.integers(0, 4), min_size=4, max_size=4))
def test_the_engine_places_a_group_exactly_when_it_fits_and_keeps_its_strategys_promise(pg, used):
    """Equal bundles of g GPUs, n of them, nodes with f_i free: STRICT_PACK fits iff max f_i ≥ n·g;
    STRICT_SPREAD iff at least n nodes have f_i ≥ g; PACK and SPREAD iff Σ ⌊f_i / g⌋ ≥ n."""
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=4, gpus=4).build())
    for node, g in enumerate(used):
        if g:
            table.take(node, PodRequest(g))
    p = engine_placement(pg, table)
    free = [4 - u for u in used]
    g, n = pg.bundles[0].gpus, len(pg.bundles)
    fits = {Strategy.STRICT_PACK: max(free) >= g * n,
            Strategy.STRICT_SPREAD: sum(f >= g for f in free) >= n,
            Strategy.PACK: sum(f // g for f in free) >= n,
            Strategy.SPREAD: sum(f // g for f in free) >= n}[pg.strategy]
    assert p.placed == fits  # placed exactly when the arithmetic says it can be
    if not p.placed:
        assert p.reason
        return
    assert len(p.nodes) == len(pg.bundles)
    for node in set(p.nodes):
        assert sum(b.gpus for b, n in zip(pg.bundles, p.nodes, strict=True) if n == node) <= 4 - used[node]
    if pg.strategy is Strategy.STRICT_PACK:
        assert len(set(p.nodes)) == 1
    if pg.strategy is Strategy.STRICT_SPREAD:
        assert len(set(p.nodes)) == len(pg.bundles)
