"""One gang search that every gang placer configures instead of copying (the kube-scheduler lesson).

A gang placer is three parts:
- *filters* (masks over nodes): ``NodeTable.slots`` (how many pods of a request each node takes:
  free resources, schedulable, allowed models, a per-node pod cap such as one task per node) and
  the per-job node filter (``filters.for_job``: ``Job.eligible_nodes``), applied here once so no
  chooser can see a node the job may not use;
- a *choice* (``ChooseNodes``) built from scorers over those masks: which nodes get how many pods
  of one pod set — best fit within a leaf (gang-bestfit, one-task-per-node), best fit with seeded
  random ties (topology-blind), the tightest NVLink-domain / leaf / spine group with the
  wait-or-start price (topology-aware, policies/topology_search.py), GPU by GPU for MIG instances
  and soft shares (fractional), least allocated pod by pod (per-pod's ``fit``);
- this search: all or nothing over every pod set of the job, on a scratch copy when there are
  several pod sets (so two sets never count the same free GPUs twice), with one rule for why a
  job can never fit (UNRESOLVABLE, against the empty fleet) and one for why it does not fit now
  (UNSCHEDULABLE, naming what is short) — or the chooser's own verdict (a WAIT from pricing, a
  fractional shortfall), which it returns as a Status.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gpufleet.engine.gpu_state import GpuSlot
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.filters import eligible_note, for_job

#: One pick of a chooser: (node, pods), or (node, 1, slot) for a fractional pod on one GPU.
Pick = tuple[int, int] | tuple[int, int, GpuSlot]
#: Which nodes take how many pods of one pod set on ``table``, as picks in replica order; None
#: when they do not fit (the search says what is short; ``Short`` hands the search the count the
#: chooser counted), or the chooser's own Status.
ChooseNodes = Callable[[NodeTable, PodSet], "Sequence[Pick] | Short | Status | None"]
#: Rewords the empty-fleet verdict for a pod set (a placer that names its request its own way).
Unresolvable = Callable[[PodSet, str], str]
#: A reason the placer refuses a pod set outright (e.g. fractional GPUs for a whole-GPU placer).
Refuse = Callable[[PodSet], "str | None"]


#: Entries ``NodeTable.empty_answers`` keeps before it starts afresh (a key holds the schedulable
#: column: a run whose nodes fail and return makes new ones).
EMPTY_ANSWERS = 4096


def empty_capacity(table: NodeTable, ps: PodSet) -> int:
    """Pods of ``ps`` the fleet holds when empty. The answer reads the table's static columns,
    its schedulable column (per-job filters included) and its per-node pod cap, so it is kept
    across cycles in ``table.empty_answers`` under those: a congested trace asks it per shape
    and cycle, 5 % of a cycle at 32 nodes (bench/README.md)."""
    memo = table.empty_answers
    if memo is None:
        return int(np.minimum(table.slots(ps.request, empty=True), ps.replicas).sum())
    key = (ps.replicas, ps.request.shape, table.pods_per_node, table.schedulable.tobytes())
    cap = memo.get(key)
    if cap is None:
        if len(memo) >= EMPTY_ANSWERS:
            memo.clear()
        cap = memo[key] = int(np.minimum(table.slots(ps.request, empty=True), ps.replicas).sum())
    return cap


def unresolvable_reason(table: NodeTable, ps: PodSet, ctx: CycleContext) -> str | None:
    """Why a pod set could never fit this fleet even if it were empty, or None."""
    key = (ps.replicas, ps.request.shape, table.pods_per_node, table.eligible)
    cap = ctx.caches.empty_capacity.get(key)
    if cap is None:
        cap = ctx.caches.empty_capacity[key] = empty_capacity(table, ps)
    if cap >= ps.replicas:
        return None
    req = ps.request
    what = f"{req.gpus} GPU(s)" if req.gpus else "no GPU"
    msg = (f"pod set {ps.name!r} needs {ps.replicas} pods of {what}; "
           f"even an empty fleet holds only {cap}{eligible_note(table)}")
    if req.cpus <= 0 and req.memory_gb <= 0:
        return msg
    # Say what binds: a CPU-only pod is not held back by GPUs, and "0 GPU(s)" alone read as if
    # it were (issue 29 §3). Counted only on this rare path, so the cache key stays the shape.
    gpu_only = PodRequest(req.gpus, 0.0, 0.0, req.gpu_models, req.gpu_milli, req.share,
                          req.gpu_memory_gb, req.mig_profile)
    by_gpus = int(np.minimum(table.slots(gpu_only, empty=True), ps.replicas).sum())
    if by_gpus <= cap:
        return msg
    asks = ", ".join(x for x in (f"{req.cpus:g} CPU(s)" if req.cpus > 0 else "",
                                 f"{req.memory_gb:.3g} GB memory" if req.memory_gb > 0 else "") if x)
    fit = f"all {ps.replicas}" if by_gpus >= ps.replicas else f"{by_gpus}"
    return (msg + f"; blocked by CPU or memory, not GPUs: by GPUs alone {fit} would fit, but the "
            f"nodes lack the {asks} each pod asks")


@dataclass(frozen=True, slots=True)
class Short:
    """A chooser's "does not fit" that hands over what it counted: how many pods of the pod
    set fit on the table it was given (each node's ``NodeTable.slots`` capped at the replicas),
    so the search's explanation (``insufficiency_reason``) reads that number instead of
    counting it again."""

    fit: int


def insufficiency_reason(table: NodeTable, ps: PodSet, counted: Short | None = None) -> str:
    """Why the pod set does not fit ``table`` now: how many of its pods fit, and, when CPU or
    memory is asked, how many would by GPUs alone. ``counted``: a chooser's ``Short``, whose
    count is read instead of counting the slots again (every failed search of a congested
    queue asks, ~1 in 20 of a congested Philly trace's cycle time before)."""
    req = ps.request
    slots = int(np.minimum(table.slots(req), ps.replicas).sum()) if counted is None else counted.fit
    if req.cpus <= 0 and req.memory_gb <= 0:
        return (f"pod set {ps.name!r} needs {ps.replicas}×{req.gpus} GPUs; "
                f"{slots} pod(s) of that shape fit now{eligible_note(table)}")
    gpu_only = PodRequest(req.gpus, 0.0, 0.0, req.gpu_models)
    gpu_slots = int(np.minimum(table.slots(gpu_only), ps.replicas).sum())
    msg = (f"pod set {ps.name!r} needs {ps.replicas}×{req.gpus} GPUs; "
           f"{slots} pod(s) of that shape fit now{eligible_note(table)}")
    if gpu_slots > slots:
        msg += f" ({gpu_slots} by GPUs alone: CPU or memory is exhausted on nodes with free GPUs)"
    return msg


# ---- the fill: pods onto nodes in a scorer's order (filters.py and scorers.py hold the rest) ----


def fill_counts(order: np.ndarray, slots: np.ndarray, replicas: int
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """The fill as two arrays: the nodes of ``order`` that get pods, and how many each (as many
    as they take until ``replicas`` are placed; nodes that take none are skipped); None when
    they hold fewer."""
    if replicas == 1:  # one pod: the first node in order that takes one (most gangs are one pod)
        if order.size and slots[order[0]] > 0:   # the choosers' orders hold only nodes with a slot
            return order[:1], np.ones(1, np.int64)
        first = (slots[order] > 0).nonzero()[0]
        return (order[first[:1]], np.ones(1, np.int64)) if first.size else None
    take = np.minimum(slots[order], replicas)
    if not take.all():
        order, take = order[take > 0], take[take > 0]
    cum = take.cumsum()
    if cum.size == 0 or int(cum[-1]) < replicas:
        return None
    stop = int(cum.searchsorted(replicas)) + 1
    counts = take[:stop].copy()
    counts[-1] -= int(cum[stop - 1]) - replicas
    return order[:stop], counts


def fill_in_order(order: np.ndarray, slots: np.ndarray, replicas: int) -> list[tuple[int, int]] | None:
    """Give the nodes in ``order`` as many pods as they take until ``replicas`` are placed, as
    (node, pods) pairs (nodes that take none are skipped); None when they hold fewer."""
    filled = fill_counts(order, slots, replicas)
    if filled is None:
        return None
    return list(zip(filled[0].tolist(), filled[1].tolist(), strict=True))   # tolist gives Python ints


def gang_search(job: Job, table: NodeTable, ctx: CycleContext, policy: str, choose: ChooseNodes,
                refuse: Refuse | None = None, unresolvable: Unresolvable | None = None
                ) -> tuple[PodBinding, ...] | Status:
    """Where every pod of ``job`` would go on ``table`` (not modified), or the Status saying why.

    The job's own node filter (``filters.for_job``) applies first, so no chooser sees a node the
    job may not use."""
    table = for_job(table, job, ctx)
    for ps in job.pod_sets:
        refused = refuse(ps) if refuse is not None else None
        if refused:
            return Status(StatusCode.UNRESOLVABLE, (refused,), policy)
        why = unresolvable_reason(table, ps, ctx)
        if why:
            if unresolvable is not None:
                why = unresolvable(ps, why)
            return Status(StatusCode.UNRESOLVABLE, (why,), policy)
    scratch = table.copy() if len(job.pod_sets) > 1 else table
    out: list[PodBinding] = []
    for ps in job.pod_sets:
        chosen = choose(scratch, ps)
        if chosen is None or isinstance(chosen, Short):
            return Status(StatusCode.UNSCHEDULABLE, (insufficiency_reason(scratch, ps, chosen),),
                          policy)
        if isinstance(chosen, Status):
            return chosen
        first = len(out)
        for pick in chosen:
            node, count = pick[0], pick[1]
            slot = pick[2] if len(pick) == 3 else None
            out += [PodBinding(job.id, ps.name, len(out) - first + i, node, ps.request, slot)
                    for i in range(count)]
        if scratch is not table:
            for pick in chosen:
                scratch.take(pick[0], ps.request, pick[1], slot=pick[2] if len(pick) == 3 else None)
    return tuple(out)
