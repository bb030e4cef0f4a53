"""Shape classes (model/shape_key.py) and ``Dominance`` (policies/shapes.py).

``Dominance`` must answer exactly as ``ShapeKey.dominates`` asked of every pair: the place walk
and the backfill scan use it to kill the classes that dominate a failed one, and a single
different answer would change which jobs are searched (and so the decisions). ``dominates``
itself is checked on named cases worked by hand."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.model.shape_key import ShapeKey
from gpufleet.policies.shapes import Dominance
from gpufleet.testing.builders import job

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
def _key(draw: st.DrawFn) -> ShapeKey:
    pods = tuple(draw(st.lists(_pod_set(), min_size=1, max_size=2)))
    constraints = ("leaf", None, None, None) if draw(st.integers(0, 4)) == 0 else None
    eligible = frozenset({"n0"}) if draw(st.integers(0, 5)) == 0 else None
    return ShapeKey(pods, constraints, eligible)


@settings(max_examples=300, deadline=None)
@given(st.lists(_key(), min_size=1, max_size=12))
def test_dominance_lists_exactly_the_classes_dominates_accepts(keys: list[ShapeKey]) -> None:
    dom = Dominance(keys)
    for c, small in enumerate(keys):
        expected = [d for d, big in enumerate(keys) if d == c or big.dominates(small)]
        assert dom.over(c) == expected
        assert dom.over(c) == expected  # the memoised answer is the same


def _plain(replicas: int, gpus: int, cpus: float, model: str = "H100-80GB") -> ShapeKey:
    return ShapeKey(((replicas, (gpus, cpus, 256.0 * gpus / 4, (model,))),))


def test_a_bigger_plain_gang_dominates_and_another_model_does_not() -> None:
    """2×8 GPUs with 64 CPUs asks at least as much as 1×4 GPUs with 32 CPUs on the same model
    (2 ≥ 1, 8 ≥ 4, 64 ≥ 32, 512 ≥ 256); the same gang on another model, or one asking fewer
    CPUs (16 < 32), does not."""
    small, big = _plain(1, 4, 32.0), _plain(2, 8, 64.0)
    other_model, fewer_cpus = _plain(2, 8, 64.0, "A100-80GB"), _plain(2, 8, 16.0)
    assert big.dominates(small) and not small.dominates(big)
    assert not other_model.dominates(small) and not fewer_cpus.dominates(small)
    dom = Dominance([small, big, other_model, fewer_cpus])
    assert dom.over(0) == [0, 1]
    assert dom.over(1) == [1]


def test_constraints_and_node_filters_compare_exactly() -> None:
    """A TP-whole (leaf) job or one limited to node n0 is neither ruled out by nor rules out a
    bigger or smaller unconstrained class, only a class with the same constraint or filter."""
    small, big = _plain(1, 4, 32.0), _plain(2, 8, 64.0)
    leaf = ("leaf", None, None, None)
    assert not replace_key(big, constraints=leaf).dominates(small)
    assert not big.dominates(replace_key(small, constraints=leaf))
    assert replace_key(big, constraints=leaf).dominates(replace_key(small, constraints=leaf))
    n0 = frozenset({"n0"})
    assert not replace_key(big, eligible=n0).dominates(small)
    assert replace_key(big, eligible=n0).dominates(replace_key(small, eligible=n0))
    assert big.plain() == (2, 8, 64.0, 512.0, ("H100-80GB",))
    assert replace_key(big, eligible=n0).plain() is None


def test_a_nan_in_a_request_never_rules_a_class_out() -> None:
    """NaN CPUs: ``8 < nan`` and ``nan < 8`` are both false, so neither side is "less"."""
    assert _plain(1, 4, math.nan).dominates(_plain(1, 4, 8.0))
    assert _plain(1, 4, 8.0).dominates(_plain(1, 4, math.nan))


def test_a_jobs_key_names_its_parts_without_sentinels() -> None:
    """A 2×8-GPU gang limited to two nodes: one pod set (2, its request's shape), no constraint,
    the filter itself; a 1×4 job on the same nodes is dominated by it, a soft share is compared
    with its tenant (t1 vs t2: neither dominates)."""
    nodes = frozenset({"n0", "n1"})
    big = replace(job("big").gpus(8).gang(2).build(), eligible_nodes=nodes)
    small = replace(job("small").gpus(4).build(), eligible_nodes=nodes)
    assert big.shape_key.pods[0][0] == 2 and big.shape_key.constraints is None
    assert big.shape_key.eligible is nodes
    assert big.shape_key.dominates(small.shape_key)
    s1 = job("s1").share(500).tenant("t1").build().shape_key
    s2 = job("s2").share(500).tenant("t2").build().shape_key
    assert s1.pods[0][1][-1] == "t1" and not s1.dominates(s2) and not s2.dominates(s1)


def replace_key(key: ShapeKey, **kw: object) -> ShapeKey:
    return key._replace(**kw)
