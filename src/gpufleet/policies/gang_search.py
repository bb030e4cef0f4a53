"""One gang search that gang placers configure instead of copying (the kube-scheduler lesson).

A gang placer is three parts:
- a node *filter and capacity*: ``NodeTable.slots`` (how many pods of a request each node takes:
  free resources, schedulable, allowed models, a per-node pod cap such as one task per node);
- a *choice* over those slots (``ChooseNodes``): which nodes get how many pods of one pod set —
  best fit within a leaf (gang-bestfit, one-task-per-node), best fit with seeded random ties
  (topology-blind);
- this search: all or nothing over every pod set of the job, on a scratch copy when there are
  several pod sets (so two sets never count the same free GPUs twice), with one rule for why a
  job can never fit (UNRESOLVABLE, against the empty fleet) and one for why it does not fit now
  (UNSCHEDULABLE, naming what is short).

The topology-aware placer (policies/topology.py, which searches NVLink-domain / leaf / spine
groups and prices waiting) and the fractional placer (policies/fractional.py, which places
MIG/soft-share pods GPU by GPU) keep their own searches for now.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext
from gpufleet.model.job import Job, PodRequest, PodSet

#: Which nodes take how many pods of one pod set on ``table``, as (node, pods) pairs in replica
#: order; None when they do not fit.
ChooseNodes = Callable[[NodeTable, PodSet], "list[tuple[int, int]] | None"]
#: A reason the placer refuses a pod set outright (e.g. fractional GPUs for a whole-GPU placer).
Refuse = Callable[[PodSet], "str | None"]


def unresolvable_reason(table: NodeTable, ps: PodSet, ctx: CycleContext) -> str | None:
    """Why a pod set could never fit this fleet even if it were empty, or None."""
    key = (ps.replicas, ps.request.shape, table.pods_per_node)
    cap = ctx.caches.empty_capacity.get(key)
    if cap is None:
        cap = int(np.minimum(table.slots(ps.request, empty=True), ps.replicas).sum())
        ctx.caches.empty_capacity[key] = cap
    if cap >= ps.replicas:
        return None
    return (f"pod set {ps.name!r} needs {ps.replicas} pods of {ps.request.gpus} GPU(s); "
            f"even an empty fleet holds only {cap}")


def insufficiency_reason(table: NodeTable, ps: PodSet) -> str:
    req = ps.request
    slots = int(np.minimum(table.slots(req), ps.replicas).sum())
    if req.cpus <= 0 and req.memory_gb <= 0:
        return (f"pod set {ps.name!r} needs {ps.replicas}×{req.gpus} GPUs; "
                f"{slots} pod(s) of that shape fit now")
    gpu_only = PodRequest(req.gpus, 0.0, 0.0, req.gpu_models)
    gpu_slots = int(np.minimum(table.slots(gpu_only), ps.replicas).sum())
    msg = (f"pod set {ps.name!r} needs {ps.replicas}×{req.gpus} GPUs; "
           f"{slots} pod(s) of that shape fit now")
    if gpu_slots > slots:
        msg += f" ({gpu_slots} by GPUs alone: CPU or memory is exhausted on nodes with free GPUs)"
    return msg


# ---- the parts: a node filter (mask), a scorer (order), and the fill ------------------------------


def tightest_leaves(table: NodeTable, slots: np.ndarray, replicas: int) -> np.ndarray:
    """Filter: the nodes of the tightest leaf that holds all ``replicas`` pods (fewest slots,
    lowest index on ties), or, when no leaf does, of the roomiest leaves that together do."""
    # No ``minlength``: every node has a leaf, so the bincount is n_leaves long already (and
    # ``table.n_leaves`` is a reduction over every node, twice per search).
    leaf_slots = np.bincount(table.leaf_idx, weights=np.minimum(slots, replicas))
    fitting = np.flatnonzero(leaf_slots >= replicas)
    if fitting.size:
        return table.leaf_idx == int(fitting[np.argmin(leaf_slots[fitting])])
    order = np.argsort(-leaf_slots, kind="stable")
    cum = np.cumsum(leaf_slots[order])
    lookup = np.zeros(leaf_slots.size, bool)
    lookup[order[: int(np.searchsorted(cum, replicas)) + 1]] = True
    return lookup[table.leaf_idx]


def best_fit_order(table: NodeTable, mask: np.ndarray, tie: np.ndarray | None = None) -> np.ndarray:
    """Scorer: the nodes in ``mask``, fewest free GPUs first (partly used nodes fill up before
    empty ones are broken); ties by node index, or by the rank ``tie`` gives each node."""
    cand = np.flatnonzero(mask)
    if tie is None:
        return cand[np.argsort(table.gpu_free[cand], kind="stable")]
    return cand[np.lexsort((tie[cand], table.gpu_free[cand]))]


def fill_in_order(order: np.ndarray, slots: np.ndarray, replicas: int) -> list[tuple[int, int]] | None:
    """Give the nodes in ``order`` as many pods as they take until ``replicas`` are placed, as
    (node, pods) pairs (nodes that take none are skipped); None when they hold fewer."""
    if replicas == 1:  # one pod: the first node in order that takes one (most gangs are one pod)
        first = np.flatnonzero(slots[order] > 0)
        return [(int(order[first[0]]), 1)] if first.size else None
    take = np.minimum(slots[order], replicas)
    if not take.all():
        order, take = order[take > 0], take[take > 0]
    cum = np.cumsum(take)
    if cum.size == 0 or int(cum[-1]) < replicas:
        return None
    stop = int(np.searchsorted(cum, replicas)) + 1
    counts = take[:stop].copy()
    counts[-1] -= int(cum[stop - 1]) - replicas
    return [(int(n), int(k)) for n, k in zip(order[:stop].tolist(), counts.tolist(), strict=True)]


def gang_search(job: Job, table: NodeTable, ctx: CycleContext, policy: str, choose: ChooseNodes,
                refuse: Refuse | None = None) -> tuple[PodBinding, ...] | Status:
    """Where every pod of ``job`` would go on ``table`` (not modified), or the Status saying why."""
    for ps in job.pod_sets:
        refused = refuse(ps) if refuse is not None else None
        if refused:
            return Status(StatusCode.UNRESOLVABLE, (refused,), policy)
        why = unresolvable_reason(table, ps, ctx)
        if why:
            return Status(StatusCode.UNRESOLVABLE, (why,), policy)
    scratch = table.copy() if len(job.pod_sets) > 1 else table
    out: list[PodBinding] = []
    for ps in job.pod_sets:
        chosen = choose(scratch, ps)
        if chosen is None:
            return Status(StatusCode.UNSCHEDULABLE, (insufficiency_reason(scratch, ps),), policy)
        first = len(out)
        for node, count in chosen:
            out += [PodBinding(job.id, ps.name, len(out) - first + i, node, ps.request)
                    for i in range(count)]
        if scratch is not table:
            for node, count in chosen:
                scratch.take(node, ps.request, count)
    return tuple(out)
