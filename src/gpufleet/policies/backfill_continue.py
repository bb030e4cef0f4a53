"""The backfill scan carried on for jobs queued behind every candidate it saw.

``ReservationBackfill`` walks its candidates in queue order, so a job queued behind all of them
is reached last: after every kill and every start the scan made. When nothing the old candidates'
verdicts depend on has changed since (the caller's proof: sim/easy_carry.py), a scan over the
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
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpufleet.engine.plan import Plan
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import BackfillTrace, CycleContext, ScanFailure
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.shape_key import ShapeKey
from gpufleet.policies.backfill import UNEXAMINED, delay_status, feasible, limited_view, take_from_limits


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
