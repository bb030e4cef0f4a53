"""The one exact-pods predicate: do these pods, on these nodes, fit that capacity?

Every check of *given* pods (a reservation's, a promise's, a fit the preemptor claims) reduces to
one per-node requirement vector and one comparison:

- ``node_need(bindings)``: per node, [GPUs, CPUs, memory] of the pods bound there, summed in binding
  order (so two checks of the same pods add the same floats);
- ``need_met``: every such node is schedulable and has free GPUs ≥ g, CPUs ≥ c − 1e-9 and
  memory ≥ m − 1e-9 (the tolerance absorbs the float sums of fractional CPU and memory asks; GPUs
  are whole numbers and compare exactly).

The capacity compared with is whatever the caller holds for those nodes: the table's free columns
now (``bindings_fit``), or what is free throughout a window (policies/backfill.py's promise
check). "How many pods of a shape could go where" is a different question, answered by
``NodeTable.slots``; both agree on a single pod of one request (a test checks it).
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
