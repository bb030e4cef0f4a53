"""``Dominance`` (policies/shapes.py) answers exactly as ``dominates`` asked of every pair: the
place walk and the backfill scan use it to kill the classes that dominate a failed one, and a
single different answer would change which jobs are searched (and so the decisions)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.policies.shapes import Dominance, dominates

_MODELS = st.sampled_from([(), ("H100-80GB",), ("A100-80GB",), ("A100-80GB", "H100-80GB")])
_CPUS = st.sampled_from([0.0, 4.0, 8.0, 16.0, math.nan])


@st.composite
def _pod_set(draw: st.DrawFn) -> tuple:
    shape = (draw(st.integers(0, 8)), draw(_CPUS), draw(st.sampled_from([0.0, 64.0, 128.0])),
             draw(_MODELS))
    if draw(st.integers(0, 4)) == 0:  # a fractional request: its tail compares exactly
        shape += ("soft", draw(st.sampled_from([250, 500])), 0.0, None)
    return (draw(st.integers(1, 4)), shape)


@st.composite
def _key(draw: st.DrawFn) -> tuple:
    key = tuple(draw(st.lists(_pod_set(), min_size=1, max_size=2)))
    if draw(st.integers(0, 4)) == 0:  # a constraint entry: must match exactly
        key += ((-1, ("topology", draw(st.sampled_from(["leaf", "spine"])), None, None, None)),)
    return key


@settings(max_examples=300, deadline=None)
@given(st.lists(_key(), min_size=1, max_size=12))
def test_dominance_lists_exactly_the_classes_dominates_accepts(keys: list[tuple]) -> None:
    dom = Dominance(keys)
    for c, small in enumerate(keys):
        expected = [d for d, big in enumerate(keys) if d == c or dominates(big, small)]
        assert dom.over(c) == expected
        assert dom.over(c) == expected  # the memoised answer is the same


def test_a_bigger_plain_gang_dominates_and_another_model_does_not() -> None:
    """2×8 GPUs with 64 CPUs asks at least as much as 1×4 GPUs with 32 CPUs on the same model
    (2 ≥ 1, 8 ≥ 4, 64 ≥ 32, 512 ≥ 256); the same gang on another model, or one asking fewer
    CPUs (16 < 32), does not."""
    small = ((1, (4, 32.0, 256.0, ("H100-80GB",))),)
    big = ((2, (8, 64.0, 512.0, ("H100-80GB",))),)
    other_model = ((2, (8, 64.0, 512.0, ("A100-80GB",))),)
    fewer_cpus = ((2, (8, 16.0, 512.0, ("H100-80GB",))),)
    dom = Dominance([small, big, other_model, fewer_cpus])
    assert dom.over(0) == [0, 1]
    assert dom.over(1) == [1]
