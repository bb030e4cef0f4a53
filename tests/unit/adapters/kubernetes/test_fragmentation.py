import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.adapters.kubernetes.fragmentation import fragmentation


def test_free_gpus_8_3_1_are_a_third_fragmented_for_4_gpu_pods():
    """12 free: a 4-GPU pod uses 8 (node 1 only) -> 1 - 8/12 = 1/3; a 2-GPU pod uses 8 + 2 -> 1/6."""
    f = fragmentation([8, 3, 1])
    assert f[1] == 0.0 and f[2] == pytest.approx(1 / 6) and f[4] == pytest.approx(1 / 3)
    assert f[8] == pytest.approx(1 / 3)


@given(st.lists(st.integers(0, 8), max_size=40))
def test_fragmentation_is_a_share_that_never_falls_as_pods_grow(free):
    f = fragmentation(free)
    assert all(0.0 <= v <= 1.0 for v in f.values())
    assert f[1] <= f[2] <= f[4] <= f[8] + 1e-12
