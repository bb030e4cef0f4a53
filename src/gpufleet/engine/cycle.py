"""run_cycle: the algorithm, one numbered step per phase.

Pure: everything it knows arrives in ``CycleInput`` (including ``now`` and a seed); everything it
decides leaves in ``CycleResult``. It never reads a clock, draws unseeded randomness or does I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpufleet.engine.plan import Plan
from gpufleet.engine.queue import PendingQueue
from gpufleet.engine.reuse import reuse_of
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import (
    AdmissionState,
    CycleContext,
    CycleInput,
    CycleResult,
    CycleStats,
    PendingJob,
)
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job


def run_cycle(inp: CycleInput) -> CycleResult:
    profile = inp.profile
    ctx = CycleContext(now=inp.now, profile=profile, rng=inp.seed,
                       running=inp.running, tenancy=inp.tenancy, usage=inp.usage,
                       previous_reservations=inp.reservations,
                       estimate_accuracy=inp.estimate_accuracy if profile.estimate_history else {},
                       disruptions=inp.disruptions, admission=inp.admission,
                       running_columns=inp.running_columns)
    plan = Plan(inp.nodes)

    # 1. admit: quota decides who may compete at all.
    admitted = profile.admitter.admit(inp.pending, ctx)
    # 2. order: a total order over admitted jobs.
    ordered = profile.orderer.order(admitted, ctx)
    # 3. place: bind what fits, in order; jobs that do not fit are "blocked".
    placed = profile.placer.place(ordered, plan, ctx)
    if placed.started and placed.blocked:
        ctx.handoff.placed_now = (placed.placed_jobs if placed.placed_jobs is not None
                                  else _jobs_with_ids(ordered, set(placed.started)))
    # 4. reserve: hold future capacity for the head of the blocked jobs.
    reservations = profile.reserver.reserve(placed.blocked, plan, ctx)
    # 5. backfill: start blocked-behind jobs that cannot delay any reservation.
    backfilled = profile.backfiller.backfill(placed.blocked, reservations, plan, ctx)
    # 6. preempt: evict whole gangs where a blocked job deserves the room and then fits.
    backfilled_ids = set(backfilled.started)
    still_blocked = ([pj for pj in placed.blocked if pj.job.id not in backfilled_ids]
                     if backfilled_ids and not reuse_of(profile.preemptor).inert
                     else placed.blocked)
    preemptions = profile.preemptor.preempt(still_blocked, plan, ctx)

    started = tuple(placed.started + backfilled.started)
    for jid in started:
        ctx.statuses.discard(jid)
    # Every admitted job left waiting carries a reason, even one no phase got to this cycle.
    unexamined = unexamined_status(profile.name)
    started_set = set(started)
    # The walk is lazy: over a snapshot, since the driver's queue changes after the cycle.
    waiting = admitted.view() if isinstance(admitted, PendingQueue) else admitted
    ctx.statuses.default((pj.job.id for pj in waiting if pj.job.id not in started_set), unexamined)
    return CycleResult(
        bindings=plan.commit(),
        started=started,
        statuses=ctx.statuses.snapshot(),
        reservations=tuple(reservations),
        preemptions=tuple(preemptions),
        stats=CycleStats(pending=len(inp.pending), considered=ctx.out.considered,
                         skipped_by_class=ctx.out.skipped_by_class),
        admission=_next_admission(ctx, started_set),
        backfill=ctx.out.backfill,
    )


def unexamined_status(policy: str) -> Status:
    """The status of a job the cycle did not reach: a strict-FIFO pass stopped before it, or
    the scan limit was reached."""
    return Status(StatusCode.WAIT, ("not examined this cycle: the scan limit was reached "
                                    "before this job's turn",), policy)


def _next_admission(ctx: CycleContext, started: set[JobId]) -> AdmissionState:
    """Admission's state for the next cycle: the reservations of jobs still waiting (a started
    job's pods hold its quota now), the sticky heads not admitted and the flavor scans to resume."""
    h = ctx.handoff
    if h.quota_reserved is None and h.sticky is None and h.flavor_scan is None and h.group_flavors is None:
        return AdmissionState()
    reserved = {j: r for j, r in (h.quota_reserved or {}).items() if j not in started}
    sticky = {q: j for q, j in (h.sticky or {}).items() if j not in started and j not in reserved}
    scan = {j: i for j, i in (h.flavor_scan or {}).items() if j not in started and j not in reserved}
    return AdmissionState(reserved, sticky, scan, dict(h.group_flavors or {}))


def _jobs_with_ids(ordered: Sequence[PendingJob], ids: set[JobId]) -> list[Job]:
    """The jobs with these ids, in order; stops as soon as all are found (placed jobs sit near
    the head of the queue)."""
    out: list[Job] = []
    for pj in ordered:
        if pj.job.id in ids:
            out.append(pj.job)
            if len(out) == len(ids):
                break
    return out
