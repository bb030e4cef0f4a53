"""Fractional-aware gang placement: whole GPUs, MIG instances and soft shares, all or nothing.

Pod sets of whole GPUs are placed as ``gang.choose_nodes`` does (tightest leaf, best fit). A
fractional pod (one MIG instance or one soft share of ONE GPU) is placed pod by pod on a scratch
copy of the table, each choice a handful of vector operations over the (nodes × GPUs) columns:

Soft share of tenant T (mode M, m milli, optional memory):
1. GPUs already softly shared in mode M *by T* with room: the one with the least free milli
   (best fit: shares of one tenant pack onto as few GPUs as possible); ties to the lowest index.
2. Otherwise a fresh idle GPU on the node with the fewest free GPUs (best fit, as gang does),
   preferring an index not in MIG mode (leaving MIG mode costs a reconfiguration).

MIG instance of profile P:
1. GPUs holding MIG instances with a valid free placement of P: the one with the most occupied
   slices (best fit), placed at the start that leaves most room (``mig.best_start``).
2. Otherwise an idle GPU already in MIG mode (no reconfiguration), node with fewest free GPUs.
3. Otherwise a fresh idle GPU, which must be reconfigured (``GpuSlot.reconfigure``; the simulator
   delays the job by ``MIG_RECONFIGURE_S``).

The tenant rule (invariant): soft shares give no memory or fault isolation (time-slicing shares
everything; MPS limits memory and threads but a fatal fault reaches every client — ops-reference
§5), so two tenants never share a GPU softly; only MIG may put two tenants on one GPU. Step 1 only
looks at T's own GPUs, and a fresh GPU is owned by T until its last share leaves. When the rule is
what keeps a pod out, the job's Status says so.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpufleet.engine.gpu_state import GpuSlot
from gpufleet.engine.phases.place import PlaceOutcome
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.model.mig import best_start
from gpufleet.policies.filters import one_pod_host
from gpufleet.policies.gang import choose_nodes, place_in_order
from gpufleet.policies.gang_search import Pick, gang_search
from gpufleet.policies.scorers import fewest_free

TENANT_RULE = ("tenant rule: soft GPU shares give no memory or fault isolation, so two tenants "
               "never share a GPU softly (only MIG may)")


def describe(req: PodRequest) -> str:
    if req.mig_profile is not None:
        return f"MIG {req.mig_profile}"
    mem = f", {req.gpu_memory_gb:g} GB" if req.gpu_memory_gb else ""
    return f"{req.share or 'milli'} share {req.gpu_milli}/1000 GPU{mem}"


def _fresh_index(table: NodeTable, node: int, *, configured: bool) -> int:
    pg = table.per_gpu
    assert pg is not None
    pick = np.flatnonzero(pg.idle[node] & (pg.mig_configured[node] == configured))
    return int(pick[0])


def choose_soft_gpu(table: NodeTable, req: PodRequest, tenant: str) -> tuple[int, GpuSlot] | None:
    """(node, slot) for one soft-share pod of ``tenant`` on ``table``, or None."""
    pg = table.per_gpu
    if pg is None:
        return None
    node_ok = one_pod_host(table, req)
    room = pg.soft_room(req, pg.tenant_index_if_known(tenant))
    cand = (room > 0) & node_ok[:, None]
    if cand.any():
        flat = np.flatnonzero(cand)
        i = int(flat[np.argmin(pg.milli_free.reshape(-1)[flat])])
        node, gpu = divmod(i, pg.valid.shape[1])
        return node, GpuSlot(gpu, tenant=tenant)
    fresh = node_ok & (table.gpu_free >= 1) & (pg.soft_per_fresh_gpu(req) >= 1)
    if not fresh.any():
        return None
    node = fewest_free(table, fresh)
    unconfigured_idle = table.gpu_free[node] - pg.idle_configured[node]
    if unconfigured_idle >= 1:
        return node, GpuSlot(_fresh_index(table, node, configured=False), tenant=tenant)
    return node, GpuSlot(_fresh_index(table, node, configured=True), tenant=tenant, reconfigure=True)


def choose_mig_gpu(table: NodeTable, req: PodRequest) -> tuple[int, GpuSlot] | None:
    """(node, slot) for one MIG instance of ``req.mig_profile`` on ``table``, or None."""
    pg = table.per_gpu
    if pg is None or req.mig_profile is None:
        return None
    profile = req.mig_profile
    node_ok = one_pod_host(table, req)
    lut = pg.mig_lut(table.gpu_models, profile)
    models = table.model_idx.astype(np.int64)
    cand = (pg.mig_room(lut, table.model_idx) > 0) & node_ok[:, None]
    if cand.any():
        flat = np.flatnonzero(cand)
        used = np.unpackbits(pg.mig_mask.reshape(-1)[flat].astype(np.uint8)[:, None], axis=1).sum(axis=1)
        i = int(flat[np.argmax(used)])
        node, gpu = divmod(i, pg.valid.shape[1])
        model = table.gpu_models[models[node]]
        start = best_start(model, profile, int(pg.mig_mask[node, gpu]))
        assert start is not None
        return node, GpuSlot(gpu, start)
    fresh_fits = node_ok & (lut[models, 0] > 0)
    for configured in (True, False):
        if configured:
            nodes = fresh_fits & (pg.idle_configured >= 1)
        else:
            nodes = fresh_fits & (table.gpu_free - pg.idle_configured >= 1)
        if nodes.any():
            node = fewest_free(table, nodes)
            start = best_start(table.gpu_models[models[node]], profile, 0)
            assert start is not None
            gpu = _fresh_index(table, node, configured=configured)
            return node, GpuSlot(gpu, start, reconfigure=not configured)
    return None


def tenant_rule_reason(table: NodeTable, req: PodRequest, tenant: str) -> str | None:
    """The tenant rule's part in a soft share not fitting: GPUs with room owned by others."""
    pg = table.per_gpu
    if pg is None or req.mig_profile is not None:
        return None
    node_ok = one_pod_host(table, req)
    others = (pg.soft_room(req, None) > 0) & node_ok[:, None] & (pg.owner != pg.tenant_index_if_known(tenant))
    n = int(others.sum())
    if not n:
        return None
    names = sorted({pg.tenants[int(o)] for o in pg.owner[others]})
    return (f"{TENANT_RULE}: {n} GPU(s) with room for this {describe(req)} are softly shared by "
            f"other tenants ({', '.join(names[:4])}) and are not offered to {tenant}")


def fit_fractional_gang(job: Job, table: NodeTable, ctx: CycleContext, policy: str
                        ) -> tuple[PodBinding, ...] | Status:
    """Where every pod of ``job`` would go on ``table`` (not modified), or the Status saying why:
    the shared gang search (policies/gang_search.py) with best fit within a leaf for whole-GPU
    pod sets and, for fractional ones, the GPU-by-GPU choice of the module doc."""

    def choose(scratch: NodeTable, ps: PodSet) -> Sequence[Pick] | Status | None:
        if not ps.request.is_fractional:
            return choose_nodes(scratch, ps.request, ps.replicas)
        return _gpu_by_gpu(scratch, ps, job.tenant, policy)

    return gang_search(job, table, ctx, policy, choose, unresolvable=_never_offered)


def _never_offered(ps: PodSet, why: str) -> str:
    if not ps.request.is_fractional:
        return why
    return (f"pod set {ps.name!r} needs {ps.replicas}× {describe(ps.request)}; no GPU "
            f"of an allowed model in this fleet offers it, even empty")


def _gpu_by_gpu(table: NodeTable, ps: PodSet, tenant: str, policy: str) -> list[Pick] | Status:
    """(node, 1, slot) per fractional pod, each chosen on a copy that holds the ones before it."""
    local = table.copy()
    picks: list[Pick] = []
    for replica in range(ps.replicas):
        picked = _choose(local, ps.request, tenant)
        if picked is None:
            return _fractional_failure(local, ps, replica, tenant, policy)
        node, slot = picked
        local.take(node, ps.request, slot=slot)
        picks.append((node, 1, slot))
    return picks


def _choose(table: NodeTable, req: PodRequest, tenant: str) -> tuple[int, GpuSlot] | None:
    return choose_mig_gpu(table, req) if req.mig_profile is not None else choose_soft_gpu(table, req, tenant)


def _fractional_failure(table: NodeTable, ps: PodSet, placed: int, tenant: str, policy: str) -> Status:
    reasons = [f"pod set {ps.name!r} needs {ps.replicas}× {describe(ps.request)}; "
               f"only {placed} fit now"]
    rule = tenant_rule_reason(table, ps.request, tenant)
    if rule:
        reasons.append(rule)
    return Status(StatusCode.UNSCHEDULABLE, tuple(reasons), policy)


class FractionalGangFit:
    """Whole gangs or nothing over whole GPUs, MIG instances and soft shares (module docstring)."""

    name = "gang-fractional"
    defer = False

    def __init__(self, stop_at_first_blocked: bool = False) -> None:
        self.stop_at_first_blocked = stop_at_first_blocked

    def feasible(self, job: Job, table: NodeTable, ctx: CycleContext) -> bool | None:
        return None

    def fit(self, job: Job, table: NodeTable, ctx: CycleContext) -> tuple[PodBinding, ...] | Status:
        return fit_fractional_gang(job, table, ctx, self.name)

    def place(self, ordered: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> PlaceOutcome:
        return place_in_order(self, ordered, plan, ctx, self.stop_at_first_blocked)
