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

from collections.abc import Sequence

import numpy as np

from gpufleet.engine.fit import bindings_fit
from gpufleet.engine.phases.place import PlaceOutcome, Placer
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.queue import QueueView
from gpufleet.engine.reuse import Reuse
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob, Reservation
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.filters import for_job, tightest_leaves
from gpufleet.policies.gang_search import Short, fill_in_order, gang_search
from gpufleet.policies.gang_search import insufficiency_reason as insufficiency_reason
from gpufleet.policies.gang_search import unresolvable_reason as unresolvable_reason
from gpufleet.policies.scorers import best_fit_order
from gpufleet.policies.shapes import Dominance


def choose_nodes(table: NodeTable, req: PodRequest, replicas: int) -> list[tuple[int, int]] | None:
    """(node, pods) pairs for ``replicas`` pods of ``req``, or None when they do not fit: the
    tightest-leaf filter, the best-fit scorer with index ties, and the shared fill."""
    chosen = _choose(table, req, replicas)
    return None if isinstance(chosen, Short) else chosen


def _choose(table: NodeTable, req: PodRequest, replicas: int) -> list[tuple[int, int]] | Short | None:
    """``choose_nodes``, saying ``Short(fit)`` where it counted the slots and found too few."""
    if table.cannot_fit(req, replicas):
        return None
    slots = table.slots(req)
    capped = np.minimum(slots, replicas)
    fit = int(capped.sum())
    if fit < replicas:
        return Short(fit)
    order = best_fit_order(table, tightest_leaves(table, capped, replicas))
    return fill_in_order(order, slots, replicas)


def fit_gang(job: Job, table: NodeTable, ctx: CycleContext, policy: str) -> tuple[PodBinding, ...] | Status:
    """Where every pod of ``job`` would go on ``table`` (not modified), or the Status saying why not:
    the shared gang search (policies/gang_search.py) with best fit within a leaf, whole GPUs only.
    """
    return gang_search(job, table, ctx, policy, best_fit_leaf,
                       refuse=lambda ps: whole_gpus_only(ps, policy))


def best_fit_leaf(table: NodeTable, ps: PodSet) -> list[tuple[int, int]] | Short | None:
    """Gang best fit's chooser (``ChooseNodes``): the tightest leaf, best fit inside."""
    return _choose(table, ps.request, ps.replicas)


def whole_gpus_only(ps: PodSet, policy: str) -> str | None:
    """The refusal of a whole-GPU placer (``Refuse``) for a MIG or soft-share pod set."""
    if not ps.request.is_fractional:
        return None
    return (f"pod set {ps.name!r} asks for a MIG instance or a soft GPU share; {policy} places "
            "whole GPUs only (use gang-fractional or gang-defrag)")


def place_in_order(placer: Placer, ordered: Sequence[PendingJob], plan: Plan, ctx: CycleContext,
                   stop_at_first_blocked: bool = False, defer: bool = False) -> PlaceOutcome:
    """Try jobs in order, binding each whole gang that fits; skip shapes known to fail.

    With ``stop_at_first_blocked`` (reservation on), the first job that does not fit ends the
    in-order pass: it and every job after it are returned as blocked, for reserve and backfill.
    With ``defer`` (conservative backfill), only jobs whose reservation has come due start here;
    every other job goes to reserve and backfill, which start it only where it breaks no promise.

    One walk serves every input: a plain list is read into a queue view first (``QueueView.of``:
    each job's columns once, as a cycle over a list always paid), a ``PendingQueue``'s view is used
    as it is. So a list and a queue get the same decisions and statuses by construction.
    """
    reserved = {r.job: r for r in ctx.previous_reservations if r.protected and r.start <= ctx.now}
    view = QueueView.of(ordered)
    if defer:
        return _start_due(view, plan, reserved)
    return _place_view(placer, view, plan, ctx, reserved, stop_at_first_blocked)


def _start_due(ordered: QueueView, plan: Plan, reserved: dict[JobId, Reservation]) -> PlaceOutcome:
    """Conservative backfill's place step: start the jobs whose reservation has come due, on the
    nodes it held, where those still fit; every other job is blocked (no status: reserve and
    backfill judge it)."""
    out = PlaceOutcome()
    started_pos: list[int] = []
    started_jobs: list[Job] = []
    for p in (ordered.positions_of(reserved).tolist() if reserved else []):
        job = ordered[p].job
        promised = reserved[job.id]
        if bindings_fit(plan.table, promised.bindings):
            for b in promised.bindings:
                plan.bind(b)
            out.started.append(job.id)
            started_jobs.append(job)
            started_pos.append(p)
    keep = np.ones(len(ordered), bool)
    keep[started_pos] = False
    out.blocked = ordered.take(np.flatnonzero(keep))
    out.placed_jobs = started_jobs
    return out


def _place_view(placer: Placer, ordered: QueueView, plan: Plan, ctx: CycleContext,
                reserved: dict[JobId, Reservation], stop_at_first_blocked: bool) -> PlaceOutcome:
    """The in-order walk over a queue view, without a Python step per job that is never searched.

    A failed shape kills its class and every class that dominates it (test_place_walk.py's rule,
    applied to the view's class column at once), and the walk jumps from one live job to the next
    with a mask, so a job whose class already failed costs nothing until its status is read: the
    place phase's statuses are written as one lazy bulk write, in queue order, as per-job writes
    would be. A reservation whose time has come is visited at its place regardless of class, and
    starts on the nodes it held (which later reservations planned around) if they still fit."""
    out = PlaceOutcome()
    classes, cls = ordered.classes, ordered.cls
    n = cls.size
    dead = np.zeros(len(classes), bool)
    why: dict[int, Status] = {}
    must = ordered.positions_of(reserved).tolist() if reserved else []
    blocked_pos: list[np.ndarray] = []   # positions of blocked jobs, in order
    judged: dict[int, Status] = {}       # a searched job's own status, by its index in blocked
    n_blocked = 0
    started_jobs: list[Job] = []
    alive = np.arange(n)
    at = pos = 0
    dom: Dominance | None = None     # dominance among the view's classes, at the first failure
    present = np.zeros(0, np.int64)

    def skip_to(stop: int) -> None:
        """Jobs in [pos, stop) sit between live jobs: their class failed already, so they are
        blocked with the class's first failure as their status (resolved when read)."""
        nonlocal pos, n_blocked
        if stop > pos:
            blocked_pos.append(np.arange(pos, stop))
            n_blocked += stop - pos
            ctx.out.skipped_by_class += stop - pos
        pos = stop

    while True:
        nxt = int(alive[at]) if at < alive.size else n
        if must and must[0] < nxt:
            nxt = must.pop(0)
        else:
            at += 1
            if must and must[0] == nxt:
                must.pop(0)
        skip_to(nxt)
        if nxt >= n:
            break
        pos = nxt + 1
        job = ordered[nxt].job
        promised = reserved.get(job.id)
        if promised is not None and bindings_fit(plan.table, promised.bindings):
            for b in promised.bindings:
                plan.bind(b)
            out.started.append(job.id)
            started_jobs.append(job)
            continue
        c = int(cls[nxt])
        if dead[c]:
            status = why[c]
            ctx.out.skipped_by_class += 1
        else:
            ctx.out.considered += 1
            fitted = placer.fit(job, plan.table, ctx)
            if not isinstance(fitted, Status):
                for b in fitted:
                    plan.bind(b)
                out.started.append(job.id)
                started_jobs.append(job)
                continue
            status = fitted
            if status.code is StatusCode.UNRESOLVABLE:  # reserve and backfill need not search it
                ctx.handoff.unresolvable.setdefault(classes[c], status)
            if status.code is not StatusCode.WAIT:  # a WAIT is this job's own pricing decision
                if dom is None:  # the view's classes only: no other class is ever read
                    present = np.flatnonzero(np.bincount(cls, minlength=len(classes)))
                    dom = Dominance([classes[i] for i in present.tolist()])
                for i in dom.over(int(present.searchsorted(c))):
                    d = int(present[i])
                    if not dead[d]:
                        dead[d] = True
                        why[d] = status
                alive = np.flatnonzero(~dead[cls[pos:]]) + pos
                at = 0
        blocked_pos.append(np.array([nxt]))
        judged[n_blocked] = status
        n_blocked += 1
        if stop_at_first_blocked and status.code is not StatusCode.UNRESOLVABLE:
            blocked_pos.append(np.arange(pos, n))
            break
    positions = np.concatenate(blocked_pos) if blocked_pos else np.zeros(0, np.int64)
    out.blocked = ordered.take(positions)
    out.placed_jobs = started_jobs
    if n_blocked:
        seen = ordered.take(positions[:n_blocked])
        by_class = np.empty(len(classes), object)
        for c, st in why.items():
            by_class[c] = st

        def verdicts() -> tuple[list[JobId], list[Status]]:
            statuses = by_class[seen.cls].tolist()
            for i, st in judged.items():
                statuses[i] = st
            return seen.ids(), statuses

        ctx.statuses.record_later(verdicts)
    return out


def gang_feasible(job: Job, table: NodeTable, ctx: CycleContext | None = None) -> bool | None:
    """Could every pod of ``job`` be placed on ``table``? Exact for one whole-GPU pod set; None
    (only ``fit`` can tell) for several pod sets, which share the capacity they are checked
    against, and for fractional requests, which whole-GPU placers refuse. The job's own node
    filter applies (``filters.for_job``), as it does in ``fit``."""
    if len(job.pod_sets) != 1 or job.pod_sets[0].request.is_fractional:
        return None
    table = for_job(table, job, ctx)
    ps = job.pod_sets[0]
    if table.cannot_fit(ps.request, ps.replicas):
        return False
    return int(np.minimum(table.slots(ps.request), ps.replicas).sum()) >= ps.replicas


class GangBestFit:
    """Whole gangs or nothing, best-fit packing, one leaf when possible."""

    name = "gang-bestfit"

    def __init__(self, stop_at_first_blocked: bool = False, defer: bool = False) -> None:
        self.stop_at_first_blocked = stop_at_first_blocked
        self.defer = defer

    def feasible(self, job: Job, table: NodeTable, ctx: CycleContext) -> bool | None:
        """A cheap yes/no for search loops (reservation); None when only ``fit`` can tell."""
        return gang_feasible(job, table, ctx)

    def fit(self, job: Job, table: NodeTable, ctx: CycleContext) -> tuple[PodBinding, ...] | Status:
        return fit_gang(job, table, ctx, self.name)

    def place(self, ordered: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> PlaceOutcome:
        return place_in_order(self, ordered, plan, ctx, self.stop_at_first_blocked, self.defer)

    def reuse(self) -> Reuse:
        """Greedy whole-gang best fit judges a job by its shape class against what is free now
        (the place walk kills a failed class on that monotonicity); deferring to due
        reservations (conservative) makes the pass depend on time as well."""
        if self.defer:
            return Reuse()
        return Reuse(monotone_classes=True, stops_at_blocked=self.stop_at_first_blocked)
