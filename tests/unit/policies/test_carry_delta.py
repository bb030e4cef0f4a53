"""fit_counts (policies/carry_delta.py): Σ min(NodeTable.slots, replicas) per request and per row block."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.job import PodRequest
from gpufleet.policies.carry_delta import fit_counts
from gpufleet.testing.builders import fleet

_TABLE = NodeTable.from_fleet(fleet().leaves(1, nodes=3).leaves(1, nodes=3, gpu="A100-80GB").build())

requests = st.tuples(
    st.builds(PodRequest, st.integers(1, 8), st.sampled_from([0.0, 1.0, 7.0, 28.0, 100.0, 0.3]),
              st.sampled_from([0.0, 64.0, 256.0, 1000.0, 0.7]),
              st.sampled_from([(), ("H100-80GB",), ("A100-80GB",), ("H100-80GB", "A100-80GB")])),
    st.integers(1, 12))


@settings(max_examples=200, deadline=None)
@given(reqs=st.lists(requests, min_size=1, max_size=6),
       gpu=st.lists(st.integers(0, 8), min_size=6, max_size=6),
       cpu=st.lists(st.floats(0, 224, allow_nan=False), min_size=6, max_size=6),
       mem=st.lists(st.floats(0, 2048, allow_nan=False), min_size=6, max_size=6),
       sched=st.lists(st.booleans(), min_size=6, max_size=6), per_node=st.sampled_from([None, 1, 2]))
def test_fit_counts_equal_slots_request_by_request(reqs, gpu, cpu, mem, sched, per_node):
    """For any free columns, schedulable mask, model filter and per-node cap: Σ min(slots, r)
    per request, and by GPUs alone, exactly as ``NodeTable.slots`` counts them one at a time
    (CPU and memory free as arbitrary floats, asks like 0.3 CPU: the truncation must agree)."""
    t = _TABLE.with_free(np.array(gpu, np.int64), np.array(cpu), np.array(mem))
    t.schedulable = np.array(sched)
    t.pods_per_node = per_node
    expected = [int(np.minimum(t.slots(q), r).sum()) for q, r in reqs]
    gpus_only = [int(np.minimum(t.slots(PodRequest(q.gpus, 0.0, 0.0, q.gpu_models)), r).sum())
                 for q, r in reqs]
    whole, by_gpus = fit_counts(t, reqs)
    assert whole[:, 0].tolist() == expected and by_gpus[:, 0].tolist() == gpus_only
    halves = fit_counts(t, reqs, parts=2)[0]
    assert halves.sum(axis=1).tolist() == expected
    assert halves[:, 0].tolist() == [int(np.minimum(t.slots(q)[:3], r).sum()) for q, r in reqs]
