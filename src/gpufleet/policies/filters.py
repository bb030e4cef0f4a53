"""Node filters: boolean masks over a ``NodeTable`` that every placer shares.

A filter answers "may this pod (or this job) go to node n?" for every node at once, as kube-scheduler's
Filter plugins do one node at a time. Placers combine them with scorers (policies/scorers.py) and
one gang search (policies/gang_search.py); none keeps its own copy.

- ``for_job``: the per-job node filter (``Job.eligible_nodes``: taints and tolerations, node
  selectors, DRA device classes, a partition's node list) as a view of the table in which the
  other nodes are unschedulable. Every filter below, and ``NodeTable.slots``, reads
  ``schedulable``, so one view makes every later question honour it — placement, the
  empty-fleet test, reservation (it asks the placer) and backfill (likewise).
- ``tightest_leaves``: the nodes of the tightest leaf that holds a gang, else of the roomiest
  leaves that together do (gang best fit's leaf rule).
- ``room_mask``: nodes with room for at least one pod of a request now.
- ``one_pod_host``: nodes with the CPU, memory, model and health for one more pod, GPU aside
  (fractional pods choose their GPU themselves).
"""

from __future__ import annotations

import numpy as np

from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleContext
from gpufleet.model.job import Job, PodRequest
from gpufleet.policies.scorers import tightest_else_largest


def eligible_mask(table: NodeTable, eligible: frozenset[str]) -> np.ndarray:
    """True for each node of ``table`` whose name is in ``eligible``."""
    return np.fromiter((name in eligible for name in table.names), bool, len(table))


def for_job(table: NodeTable, job: Job, ctx: CycleContext | None = None) -> NodeTable:
    """``table`` as ``job`` may use it: unchanged when the job may use every node, else a view
    (free columns shared) where nodes outside ``job.eligible_nodes`` are unschedulable. The mask
    is built once per cycle and node set (``PlaceCaches.eligible_masks``): the fleet's node
    names are fixed for the cycle."""
    allowed = job.eligible_nodes
    if allowed is None or table.eligible == allowed:
        return table
    masks = ctx.caches.eligible_masks if ctx is not None else None
    mask = masks.get(allowed) if masks is not None else None
    if mask is None or mask.size != len(table):
        mask = eligible_mask(table, allowed)
        if masks is not None:
            masks[allowed] = mask
    return table.restricted(allowed, mask)


def room_mask(table: NodeTable, req: PodRequest) -> np.ndarray:
    """Nodes that take at least one more pod of ``req`` now (``NodeTable.slots`` > 0)."""
    return table.slots(req) > 0


def one_pod_host(table: NodeTable, req: PodRequest) -> np.ndarray:
    """Nodes with CPU, memory, model and health for one more pod of ``req`` (GPU aside)."""
    ok = table.schedulable & (table.cpu_free >= req.cpus - 1e-9) & (table.mem_free >= req.memory_gb - 1e-9)
    mm = table.model_mask(req.gpu_models)
    return ok if mm is None else ok & mm


def eligible_note(table: NodeTable) -> str:
    """`` on its N eligible nodes`` when ``table`` is a per-job view, else nothing: appended to
    a job's reasons so a waiting job says that its own node filter is what narrows the fleet."""
    if table.eligible is None:
        return ""
    return f" (on the {int(np.count_nonzero(table.schedulable))} schedulable node(s) it is eligible for)"


def tightest_leaves(table: NodeTable, capped: np.ndarray, replicas: int) -> np.ndarray:
    """Filter: the nodes with a slot (ascending) of the tightest leaf that holds all
    ``replicas`` pods (fewest slots, lowest index on ties), or, when no leaf does, of the
    roomiest leaves that together do. ``capped``: pods per node, at most ``replicas`` each (a
    node counts for no more pods than the gang has; the caller has capped them to count them).

    Where the table knows its leaves are runs of nodes (``NodeTable.leaf_start``), the slots
    per leaf are one integer ``reduceat`` and a leaf's nodes a slice: a third of the cost of a
    weighted ``bincount`` and two passes over every node, per gang search (bench/README.md,
    "what-if: the leaf rule on runs of nodes"). The sums are the same integers either way."""
    start = table.leaf_start
    if start is None:
        # No ``minlength``: every node has a leaf, so the bincount is n_leaves long already.
        leaf_slots = np.bincount(table.leaf_idx, weights=capped)
    else:
        leaf_slots = np.add.reduceat(capped, start)
    leaves = tightest_else_largest(leaf_slots, replicas, tight_remainder=False)[0]
    if start is not None and leaves.size == 1:
        lo = int(start[leaves[0]])
        hi = int(start[leaves[0] + 1]) if leaves[0] + 1 < start.size else len(table)
        return (capped[lo:hi] > 0).nonzero()[0] + lo
    if leaves.size == 1:
        mask = table.leaf_idx == leaves[0]
    else:
        lookup = np.zeros(leaf_slots.size, bool)
        lookup[leaves] = True
        mask = lookup[table.leaf_idx]
    return (mask & (capped > 0)).nonzero()[0]
