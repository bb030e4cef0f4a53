"""Gang placement with best-fit packing that keeps a gang inside one leaf when it can.

Algorithm, per pod set of ``r`` replicas asking ``g`` GPUs (and CPU, memory, models) each:
1. ``slots[n]`` = pods of that shape node ``n`` can take now (vector over nodes).
2. Per leaf, ``leaf_slots = bincount(leaf, slots)``. If some leaf holds all ``r`` pods, use the
   *tightest* such leaf (fewest slots ≥ r; ties to the lowest index): big holes stay whole for
   big gangs, and the gang's traffic stays under one switch.
3. Otherwise span leaves, largest first, so the gang crosses as few leaf uplinks as possible.
4. Inside the chosen leaves, fill the nodes with the fewest free GPUs first (best fit), giving each
   node as many pods as it has slots, so partly used nodes fill up before empty ones are broken.
All pod sets of a job are placed on one Plan; if any fails, the job's pods are rolled back.
"""

from __future__ import annotations

import numpy as np

from gpufleet.engine.phases.place import PlaceOutcome
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.shapes import FailedShapes


def choose_nodes(table: NodeTable, req: PodRequest, replicas: int) -> list[tuple[int, int]] | None:
    """(node, pods) pairs for ``replicas`` pods of ``req``, or None when they do not fit."""
    slots = table.slots(req)
    total = int(np.minimum(slots, replicas).sum())
    if total < replicas:
        return None
    leaf_slots = np.bincount(table.leaf_idx, weights=np.minimum(slots, replicas),
                             minlength=table.n_leaves)
    fitting = np.flatnonzero(leaf_slots >= replicas)
    if fitting.size:
        best = fitting[np.argmin(leaf_slots[fitting])]
        leaves = [int(best)]
    else:
        order = np.argsort(-leaf_slots, kind="stable")
        cum = np.cumsum(leaf_slots[order])
        leaves = [int(x) for x in order[: int(np.searchsorted(cum, replicas)) + 1]]
    candidates = np.flatnonzero(np.isin(table.leaf_idx, leaves) & (slots > 0))
    # Best fit: fewest free GPUs first; ties by node index (stable).
    candidates = candidates[np.argsort(table.gpu_free[candidates], kind="stable")]
    out: list[tuple[int, int]] = []
    left = replicas
    for n in candidates:
        k = int(min(slots[n], left))
        out.append((int(n), k))
        left -= k
        if left == 0:
            return out
    return None  # pragma: no cover - guarded by the totals above


def unresolvable_reason(table: NodeTable, ps: PodSet, ctx: CycleContext) -> str | None:
    """Why a pod set could never fit this fleet even if it were empty, or None."""
    key = (ps.replicas, ps.request.shape)
    cap = ctx.empty_slots_cache.get(key)
    if cap is None:
        cap = int(np.minimum(table.slots(ps.request, empty=True), ps.replicas).sum())
        ctx.empty_slots_cache[key] = cap
    if cap >= ps.replicas:
        return None
    return (f"pod set {ps.name!r} needs {ps.replicas} pods of {ps.request.gpus} GPU(s); "
            f"even an empty fleet holds only {cap}")


def insufficiency_reason(table: NodeTable, ps: PodSet) -> str:
    req = ps.request
    slots = int(np.minimum(table.slots(req), ps.replicas).sum())
    gpu_only = PodRequest(req.gpus, 0.0, 0.0, req.gpu_models)
    gpu_slots = int(np.minimum(table.slots(gpu_only), ps.replicas).sum())
    msg = (f"pod set {ps.name!r} needs {ps.replicas}×{req.gpus} GPUs; "
           f"{slots} pod(s) of that shape fit now")
    if gpu_slots > slots:
        msg += f" ({gpu_slots} by GPUs alone: CPU or memory is exhausted on nodes with free GPUs)"
    return msg


def try_place_gang(job: Job, plan: Plan, ctx: CycleContext, policy: str) -> Status | None:
    """Bind every pod of ``job`` on ``plan`` or nothing; None on success, else the reason."""
    for ps in job.pod_sets:
        why = unresolvable_reason(plan.table, ps, ctx)
        if why:
            return Status(StatusCode.UNRESOLVABLE, (why,), policy)
    mark = plan.checkpoint()
    for ps in job.pod_sets:
        chosen = choose_nodes(plan.table, ps.request, ps.replicas)
        if chosen is None:
            reason = insufficiency_reason(plan.table, ps)
            plan.rollback(mark)
            return Status(StatusCode.UNSCHEDULABLE, (reason,), policy)
        replica = 0
        for node, count in chosen:
            for _ in range(count):
                plan.bind(PodBinding(job.id, ps.name, replica, node, ps.request))
                replica += 1
    return None


class GangBestFit:
    """Whole gangs or nothing, best-fit packing, one leaf when possible; tries every job in order."""

    name = "gang-bestfit"

    def place(self, ordered: list[PendingJob], plan: Plan, ctx: CycleContext) -> PlaceOutcome:
        out = PlaceOutcome()
        failed = FailedShapes()
        for pj in ordered:
            job = pj.job
            known = failed.known_failure(job)
            if known is not None:
                ctx.skipped_by_class += 1
                ctx.statuses[job.id] = known
                out.blocked.append(pj)
                continue
            ctx.considered += 1
            status = try_place_gang(job, plan, ctx, self.name)
            if status is None:
                out.started.append(job.id)
            else:
                failed.record(job, status)
                ctx.statuses[job.id] = status
                out.blocked.append(pj)
        return out
