"""The one exact-pods predicate: do these pods, on these nodes, fit that capacity?

Every check of *given* pods (a reservation's, a promise's, a fit the preemptor claims) is one
per-node requirement vector, ``node_need`` ([GPUs, CPUs, memory] per node, summed in binding
order, so two checks of the same pods add the same floats), and one comparison, ``need_met``:
each node schedulable, free GPUs ≥ g, CPUs ≥ c − 1e-9, memory ≥ m − 1e-9 (the tolerance absorbs
float sums of fractional asks; GPUs are whole and compare exactly), against the capacity the
caller holds: free now (``bindings_fit``) or free throughout a window (the promise check in
policies/backfill.py). "How many pods of a shape fit where" is ``NodeTable.slots``; the two
agree on a single pod (tests/unit/engine/test_fit.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable


def node_need(bindings: Sequence[PodBinding]) -> dict[int, list[float]]:
    """Per node, the [GPUs, CPUs, memory] these pods ask, summed in binding order."""
    acc_by_node: dict[int, list[float]] = {}
    for b in bindings:
        acc = acc_by_node.setdefault(b.node, [0.0, 0.0, 0.0])
        acc[0] += b.request.gpus
        acc[1] += b.request.cpus
        acc[2] += b.request.memory_gb
    return acc_by_node


def need_met(needs: Iterable[list[float]], sched: Iterable[bool], gpu: Iterable[float],
             cpu: Iterable[float], mem: Iterable[float]) -> bool:
    """The predicate: each need against the capacity ``(sched, gpu, cpu, mem)`` of its node, in
    step. Plain Python numbers (or numpy scalars for a node or two) in: no array per column."""
    return all(ok and gf >= g and cf >= c - 1e-9 and mf >= m - 1e-9 for ok, gf, cf, mf, (g, c, m) in zip(
        sched, gpu, cpu, mem, needs, strict=True))


def bindings_fit(table: NodeTable, bindings: Sequence[PodBinding]) -> bool:
    """Do these exact pods fit on ``table`` now? ``need_met`` on the table's free columns."""
    per_node = node_need(bindings)
    if len(per_node) == 1:  # most promises: one node, read in place
        ((n, need),) = per_node.items()
        return need_met((need,), (table.schedulable[n],), (table.gpu_free[n],), (table.cpu_free[n],),
                        (table.mem_free[n],))
    # Several nodes: one gather per column (an index array: a list converts per gather).
    nodes = np.fromiter(per_node, np.int64, len(per_node))
    return need_met(per_node.values(), table.schedulable[nodes].tolist(),
                    table.gpu_free[nodes].tolist(), table.cpu_free[nodes].tolist(),
                    table.mem_free[nodes].tolist())
