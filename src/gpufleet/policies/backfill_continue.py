"""The backfill scan carried on for jobs queued behind every candidate it saw.

``ReservationBackfill`` walks its candidates in queue order, so a job queued behind all of them
is reached last: after every kill and every start the scan made. When nothing the old candidates'
verdicts depend on has changed since (the caller's proof: policies/backfill_carry.py), a scan over the
old candidates plus new ones ends, for the old ones, exactly as the traced scan did, and each new
job's verdict follows from the trace (``BackfillTrace``) and the current capacity alone:

1. killed: by the first UNRESOLVABLE class the place step settled that the job's class equals
   or dominates (every mode), else by the first failed search, in scan order, of a class the
   job's class equals or dominates, made in the job's mode or a lower one (``_Scan.fail``'s
   rule). The job gets that verdict; a "fits now, but would delay the reservation" verdict names
   the end of the job that failed, which moves with ``now``, so it is worded again for now.
2. not killed, after ``max_tests`` searches: not examined (the scan stopped before its turn).
3. otherwise it is searched on the view of its mode, as the scan searches it: bound when it
   fits (its usage comes off the limits of the protected reservations it runs past), else its
   failure is appended to the trace and kills as any failure does.

Modes: a job of planned run p at time t runs past the k protected starts before t + p (mode k).

The checks that the old candidates' verdicts still hold (``give_back``, ``still_failing``,
``shrunk_alike``, ``re_anchor``) are here too; which of them a carried-on cycle needs, and why
they suffice, is the caller's proof (policies/backfill_carry.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from gpufleet.engine.plan import Plan
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import BackfillTrace, CycleContext, RunningJob, ScanFailure
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.shape_key import ShapeKey
from gpufleet.policies.backfill_limits import (
    UNEXAMINED,
    delay_status,
    feasible,
    limited_view,
    take_from_limits,
)
from gpufleet.policies.carry_delta import Delta


def mode_of(trace: BackfillTrace, end: float) -> int:
    """How many protected reservations start before ``end`` (the scan's ``searchsorted``)."""
    return int(np.searchsorted(np.asarray(trace.starts, float), end, side="left")) if trace.starts else 0


def killed_by(trace: BackfillTrace, key: ShapeKey, mode: int, now: float) -> Status | None:
    """The verdict a job of class ``key`` in ``mode`` gets without a search of its own, if any."""
    for shape, status in trace.settled:
        if shape == key or key.dominates(shape):
            return status
    for f in trace.failures:
        if f.mode <= mode and (f.key == key or key.dominates(f.key)):
            if f.planned is not None and trace.first is not None:
                return delay_status(now + f.planned, trace.first, trace.policy)
            return f.status
    return None


def continue_scan(trace: BackfillTrace, jobs: Sequence[Job], plan: Plan, ctx: CycleContext
                  ) -> tuple[list[JobId], dict[JobId, Status]]:
    """Carry the traced scan on over ``jobs`` (queued, in this order, behind all its candidates)
    at ``ctx.now`` on ``plan``: the jobs started (bound on ``plan``) and every other job's verdict.
    The trace is updated in place (searches made, failures, limits), so it can be carried on again."""
    started: list[JobId] = []
    verdicts: dict[JobId, Status] = {}
    placer = ctx.profile.placer
    for job in jobs:
        planned = ctx.planned_run(job)
        mode = mode_of(trace, ctx.now + planned)
        key = job.shape_key
        verdict = killed_by(trace, key, mode, ctx.now)
        if verdict is None and trace.tests >= trace.max_tests:
            verdict = UNEXAMINED
        if verdict is not None:
            verdicts[job.id] = verdict
            continue
        trace.tests += 1
        fitted = placer.fit(job, limited_view(plan.table, trace.limits, mode), ctx)
        if isinstance(fitted, Status) and fitted.code is StatusCode.WAIT:
            verdicts[job.id] = fitted  # the placer's own choice: no class verdict
            continue
        if isinstance(fitted, Status):
            delay = None
            if mode > 0 and trace.first is not None and feasible(ctx, job, plan.table):
                delay = planned
                fitted = delay_status(ctx.now + planned, trace.first, trace.policy)
            trace.failures.append(ScanFailure(key, mode, fitted, job, delay))
            verdicts[job.id] = fitted
            continue
        for b in fitted:
            plan.bind(b)
        take_from_limits(trace.limits, mode, fitted)
        started.append(job.id)
    return started, verdicts


def give_back(trace: BackfillTrace, finished: Sequence[RunningJob], ctx: CycleContext) -> None:
    """A job that ended now gives a protected limit back what it held past the reservation's start
    (what it held before that, the limit already counted as released): the limits of the
    protected starts before its planned end."""
    for rj in finished:
        end = rj.start_time + max(ctx.planned_run(rj.job) - rj.progress_before, 0.0)
        take_from_limits(trace.limits, mode_of(trace, end), rj.bindings, sign=+1)


def still_failing(trace: BackfillTrace, head: Job, table: NodeTable, ctx: CycleContext,
                  shape: Callable[[Status], object]) -> bool:
    """After finishes: the head ``head`` and every failed search fail now as they did, with a
    verdict of the same ``shape`` (policies/backfill_carry.py, premise 7). A verdict made at the anchor
    whose fit counts on the changed nodes are the anchor's is the same verdict; any other is
    searched again now (and, failing alike, renewed with now's numbers)."""
    placer = ctx.profile.placer
    delta = Delta(trace, table)
    anchored = [i for i, f in enumerate(trace.failures[:trace.anchored])
                if f.status.code is not StatusCode.UNRESOLVABLE]
    same = delta.same([(head, 0)] + [(trace.failures[i].job, trace.failures[i].mode) for i in anchored])
    unchanged = {i for i, ok in zip(anchored, same[1:], strict=True) if ok}
    if not same[0]:
        head_now = placer.fit(head, table, ctx)
        head_then = placer.fit(head, table.with_free(*trace.view0), ctx)
        if not (isinstance(head_now, Status) and isinstance(head_then, Status)
                and shape(head_now) == shape(head_then)):
            return False
    views: dict[int, NodeTable] = {}
    renewed = []
    for i, f in enumerate(trace.failures):
        if f.status.code is StatusCode.UNRESOLVABLE or i in unchanged:
            renewed.append(f)  # against the empty fleet, or the anchor's counts: the same verdict
            continue
        mode = f.mode
        if mode not in views:
            views[mode] = limited_view(table, trace.limits, mode)
        now = placer.fit(f.job, views[mode], ctx)
        if not isinstance(now, Status):
            return False
        fits_now = mode > 0 and feasible(ctx, f.job, table)
        if f.planned is not None:
            if not fits_now:
                return False
            renewed.append(f)  # still fits in mode 0: the same delay verdict
            continue
        if fits_now or shape(now) != shape(f.status):
            return False  # freed capacity would turn it into a delay verdict, or another reason
        renewed.append(replace(f, status=now))  # its numbers now, for the jobs it kills from now on
    trace.failures[:] = renewed
    return True


def re_anchor(trace: BackfillTrace, table: NodeTable) -> None:
    """Every failed search was just checked against the capacity now: it is the new anchor."""
    trace.view0 = (table.gpu_free.copy(), table.cpu_free.copy(), table.mem_free.copy())
    trace.limits_initial = [[a.copy() for a in lim] for lim in trace.limits]
    trace.anchored = len(trace.failures)


def shrunk_alike(trace: BackfillTrace, head: Job, table: NodeTable) -> bool:
    """Arrivals only (policies/backfill_carry.py, premise 7): on the nodes whose free capacity moved since
    the anchor, ``head`` and every failed search fit as many pods as they did."""
    delta = Delta(trace, table)
    if not delta:
        return True
    checked = [(head, 0)] + [(f.job, f.mode) for f in trace.failures
                                  if f.status.code is not StatusCode.UNRESOLVABLE]
    return all(delta.same(checked))
