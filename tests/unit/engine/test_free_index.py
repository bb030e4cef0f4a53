from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.engine.free_index import FreeIndex
from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.job import PodRequest
from gpufleet.testing.builders import fleet


def rebuilt(t: NodeTable) -> list[list[int]]:
    return FreeIndex.build(t.model_idx, t.gpu_free, t.schedulable, len(t.gpu_models), 8).hist


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(st.tuples(st.integers(0, 7), st.sampled_from([1, 2, 4, 8]), st.booleans()),
                    max_size=60))
def test_the_index_always_equals_one_rebuilt_from_scratch(ops):
    t = NodeTable.from_fleet(fleet().leaves(2, nodes=4).build())
    held: list[tuple[int, PodRequest]] = []
    for node, gpus, release in ops:
        if release and held:
            n, req = held.pop()
            t.give(n, req)
        elif t.gpu_free[node] >= gpus:
            req = PodRequest(gpus)
            t.take(node, req)
            held.append((node, req))
        assert t.index.hist == rebuilt(t)


def test_the_index_bounds_pods_by_free_gpus_alone():
    t = NodeTable.from_fleet(fleet().leaves(1, nodes=3).build())
    t.take(0, PodRequest(5))          # free: 3, 8, 8
    assert t.index.max_pods(4, None) == 4
    assert t.cannot_fit(PodRequest(4), 5)
    assert not t.cannot_fit(PodRequest(4), 4)


def test_a_model_the_fleet_lacks_can_never_fit():
    t = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    assert t.cannot_fit(PodRequest(1, gpu_models=("B200",)), 1)
