"""The per-pod baseline: what the default Kubernetes scheduler does with a multi-pod job.

Each pod is scheduled on its own; a pod that fits is bound and holds its GPUs whether or not its
siblings fit. Pods are queued by (priority, submit time, replica index, job id): the controllers of
two jobs created at the same moment create their pods concurrently, so the pods of those jobs
interleave in the scheduling queue. Scoring is LeastAllocated (spread), kube-scheduler's default
for NodeResourcesFit.

The failure mode this reproduces: 8 nodes × 8 GPUs, two jobs of 8 pods × 8 GPUs arriving together.
Pods alternate A0, B0, A1, B1, …: each job binds 4 pods (32 GPUs), the fleet is full, neither job
has all 8 pods, and neither can ever start — 64 GPUs held, 0 GPUs working, forever.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpufleet.engine.phases.place import PlaceOutcome
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.filters import for_job, room_mask
from gpufleet.policies.gang import gang_feasible, insufficiency_reason
from gpufleet.policies.gang_search import gang_search
from gpufleet.policies.scorers import best_of, least_allocated

FRACTIONAL = "asks for a MIG instance or a soft GPU share; per-pod places whole GPUs only"


def _whole_gpus_only(ps: PodSet) -> str | None:
    return FRACTIONAL if ps.request.is_fractional else None


def least_allocated_node(table: NodeTable, req: PodRequest) -> int | None:
    """kube-scheduler's LeastAllocated: among nodes with room for one pod (the ``room_mask``
    filter), the one with the largest free share of its GPUs (the ``least_allocated`` scorer),
    lowest index on ties; None when no node has room."""
    fits = np.flatnonzero(room_mask(table, req))
    return best_of(fits, least_allocated(table, fits))


class PerPodLeastAllocated:
    name = "per-pod"
    stop_at_first_blocked = False
    defer = False

    def feasible(self, job: Job, table: NodeTable, ctx: CycleContext) -> bool | None:
        return gang_feasible(job, table, ctx)

    def fit(self, job: Job, table: NodeTable, ctx: CycleContext) -> tuple[PodBinding, ...] | Status:
        """Where per-pod scheduling would put every pod of ``job`` alone on ``table``: the shared
        gang search with a chooser that places pod by pod, least allocated first, each pod
        seeing the ones before it. Whole GPUs only."""

        def pod_by_pod(scratch: NodeTable, ps: PodSet) -> list[tuple[int, int]] | Status:
            local = scratch.copy()
            picks: list[tuple[int, int]] = []
            for _ in range(ps.replicas):
                node = least_allocated_node(local, ps.request)
                if node is None:
                    return Status(StatusCode.UNSCHEDULABLE, (insufficiency_reason(local, ps),), self.name)
                local.take(node, ps.request)
                picks.append((node, 1))
            return picks

        return gang_search(job, table, ctx, self.name, pod_by_pod, refuse=_whole_gpus_only)

    def place(self, ordered: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> PlaceOutcome:
        queue: list[tuple[int, float, int, str, PendingJob, str, PodRequest]] = []
        for pj in ordered:
            bound = {(b.pod_set, b.replica) for b in pj.bound}
            for ps in pj.job.pod_sets:
                for r in range(ps.replicas):
                    if (ps.name, r) not in bound:
                        queue.append((-pj.job.priority, pj.job.submit_time, r, pj.job.id, pj,
                                      ps.name, ps.request))
        queue.sort(key=lambda q: q[:4])
        bound_now: dict[str, int] = {}
        failed: set[tuple] = set()
        table = plan.table
        views: dict[frozenset[str] | None, NodeTable] = {}
        for _, _, replica, _, pj, ps_name, req in queue:
            if req.is_fractional:
                continue  # whole GPUs only: the job gets an UNRESOLVABLE status below
            key = (req.shape, pj.job.eligible_nodes)
            if key in failed:
                ctx.out.skipped_by_class += 1
                continue
            ctx.out.considered += 1
            view = views.get(pj.job.eligible_nodes)
            if view is None:  # one view per node filter: it shares the plan's free columns
                view = views[pj.job.eligible_nodes] = for_job(table, pj.job, ctx)
            node = least_allocated_node(view, req)
            if node is None:
                failed.add(key)
                continue
            plan.bind(PodBinding(pj.job.id, ps_name, replica, node, req))
            bound_now[pj.job.id] = bound_now.get(pj.job.id, 0) + 1
        out, blocked = PlaceOutcome(), list[PendingJob]()
        for pj in ordered:
            have = len(pj.bound) + bound_now.get(pj.job.id, 0)
            need = pj.job.total_pods
            if have == need:
                out.started.append(pj.job.id)
                continue
            blocked.append(pj)
            if any(ps.request.is_fractional for ps in pj.job.pod_sets):
                ctx.statuses.record(pj.job.id, Status(StatusCode.UNRESOLVABLE, (FRACTIONAL,), self.name))
                continue
            code = StatusCode.WAIT if have else StatusCode.UNSCHEDULABLE
            ctx.statuses.record(pj.job.id, Status(
                code, (f"{have} of {need} pods bound; the bound pods hold their GPUs while the "
                       f"other {need - have} wait",), self.name))
        out.blocked = blocked
        return out

