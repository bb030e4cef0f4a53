"""``bindings_fit`` (engine/fit.py), the one exact-pods predicate: a reservation's exact pods fit
a table exactly when, on every node they use, the node is schedulable and its free GPUs, CPUs and
memory cover the sum of what its pods ask. The reference below sums per node with numpy (whole
numbers, so the sums are exact in any order) and compares node by node; it is checked with one
node and with many (the function reads the columns per node for a few nodes and gathers them for
many)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.engine.fit import bindings_fit
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.job import PodRequest
from gpufleet.testing.builders import fleet

_REQUESTS = [PodRequest(1, 8.0, 64.0), PodRequest(2, 16.0, 128.0), PodRequest(4, 32.0, 512.0),
             PodRequest(8, 64.0, 1024.0)]


def _reference(table: NodeTable, bindings: list[PodBinding]) -> bool:
    n = len(table)
    need = np.zeros((3, n))
    for b in bindings:
        need[:, b.node] += (b.request.gpus, b.request.cpus, b.request.memory_gb)
    used = sorted({b.node for b in bindings})
    return all(table.schedulable[i] and table.gpu_free[i] >= need[0, i]
               and table.cpu_free[i] >= need[1, i] and table.mem_free[i] >= need[2, i] for i in used)


def _table(free: list[tuple[int, int, int, bool]]) -> NodeTable:
    """Two leaves of four 8-GPU nodes with node i's free GPUs, 8-CPU and 64-GB units and health
    set from ``free[i]``."""
    table = NodeTable.from_fleet(fleet().leaves(2, nodes=4).build())
    for i, (g, c, m, ok) in enumerate(free):
        table.gpu_free[i] = g
        table.cpu_free[i] = 8.0 * c
        table.mem_free[i] = 64.0 * m
        table.schedulable[i] = ok
    return table


FREE = st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8), st.integers(0, 16), st.booleans()),
                min_size=8, max_size=8)


@settings(max_examples=200, deadline=None)
@given(free=FREE,
       pods=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 3)), min_size=1, max_size=12))
def test_pods_fit_exactly_when_every_node_they_use_covers_their_sum(
        free: list[tuple[int, int, int, bool]], pods: list[tuple[int, int]]) -> None:
    table = _table(free)
    bindings = [PodBinding("j", "w", r, node, _REQUESTS[k]) for r, (node, k) in enumerate(pods)]
    assert bindings_fit(table, tuple(bindings)) == _reference(table, bindings)


def test_a_gang_over_four_nodes_fails_on_the_one_node_short_of_memory() -> None:
    """Four 8-GPU pods asking 1,024 GB each on four empty nodes fit; with 1,000 GB free on the
    third node (1,000 < 1,024) they do not, though every node has its 8 GPUs."""
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=4).build())
    pods = tuple(PodBinding("j", "w", r, r, PodRequest(8, 64.0, 1024.0)) for r in range(4))
    table.mem_free[:] = 2048.0
    assert bindings_fit(table, pods)
    table.mem_free[2] = 1000.0
    assert not bindings_fit(table, pods)


@settings(max_examples=200, deadline=None)
@given(free=FREE,
       k=st.integers(0, 3), node=st.integers(0, 7))
def test_one_pod_fits_exactly_where_slots_counts_at_least_one(
        free: list[tuple[int, int, int, bool]], k: int, node: int) -> None:
    """The predicate and the pod count (``NodeTable.slots``) are one rule: a single pod of a
    request fits on a node exactly when that node's slot count for the request is ≥ 1."""
    table = _table(free)
    req = _REQUESTS[k]
    pod = (PodBinding("j", "w", 0, node, req),)
    assert bindings_fit(table, pod) == (int(table.slots(req)[node]) >= 1)
