"""Reservation and backfill: big gangs get a start time; small jobs fill the holes without delaying it.

Reserve (``ShadowReserver``). For the blocked jobs in queue order (up to ``depth``), find the
earliest start: the smallest k such that the job fits in *free now + what the first k running jobs
release when they end* (by their estimates), minus what earlier reservations hold over the job's
own window. The placer's own ``fit`` answers "fits?", so a topology-aware placer's rules bind the
reservation too. The search is a binary search over k: for the head job it is exact (feasibility
only grows as jobs end); behind other holds feasibility need not be monotone, so the answer is a
start that is feasible (never one that collides with a hold), possibly later than the earliest.
EASY protects the first reservation only; conservative protects ``protect`` of them. Every
reserved job's Status carries ``estimated_start``.

Backfill (``ReservationBackfill``). A later job may start now if it fits, where a job that would
still run at a protected reservation's start s_r sees, per node, at most
    limit_r = free_at(s_r) − held_r
i.e. whatever the reservation does not need at s_r. Jobs that end (by estimate) before s_r see the
whole free capacity. Each backfilled job that runs past s_r lowers limit_r by what it takes, so no
sequence of backfills can delay a protected reservation — if estimates hold. An overrun job is
extended, not killed (see ``CycleContext.expected_end``); the next cycle recomputes.

Scale: candidates are grouped by shape class and by *mode* (how many protected reservations they
overlap). A (class, mode) that failed is not searched again this cycle, and at most
``max_tests`` fit searches run per cycle (Slurm's ``bf_max_job_test``), in queue order.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from gpufleet.engine.phases.place import PlaceOutcome
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob, Reservation, RunningJob
from gpufleet.policies.availability import Availability, Hold
from gpufleet.policies.gang import bindings_fit
from gpufleet.policies.shapes import FailedShapes

SCRATCH_KEY = "backfill.holds"


def _fit(ctx: CycleContext, job, table: NodeTable):
    return ctx.profile.placer.fit(job, table, ctx)  # type: ignore[attr-defined]


def _just_placed(plan: Plan, ctx: CycleContext) -> list[RunningJob]:
    """This cycle's placements as running jobs, so their ends free capacity in the schedule."""
    if not ctx.placed_now:
        return []
    by_job: dict[str, list[PodBinding]] = {}
    for b in plan.commit():
        by_job.setdefault(b.job, []).append(b)
    return [RunningJob(j, ctx.now, tuple(by_job.get(j.id, ()))) for j in ctx.placed_now]


def _keep_estimate(status: Status, prior: Status | None) -> Status:
    """A backfill verdict keeps the start estimate the reservation schedule gave the job."""
    if prior is None or prior.estimated_start is None:
        return status
    return Status(status.code, (*status.reasons, *prior.reasons[-1:]), status.policy, prior.estimated_start)


def _feasible(ctx: CycleContext, job, table: NodeTable) -> bool:
    """Yes/no without building a placement when the placer offers a cheap test."""
    quick = getattr(ctx.profile.placer, "feasible", None)
    answer = quick(job, table, ctx) if quick is not None else None
    return not isinstance(_fit(ctx, job, table), Status) if answer is None else answer


def window_free(avail: Availability, holds: list[Hold], start: float, end: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node, the capacity free throughout [start, end): running jobs only release capacity,
    holds take it while active, so the minimum sits at ``start`` or at a hold's start inside the
    window: min over τ of free(τ) − Σ holds active at τ."""
    points = [start, *sorted({h.start for h in holds if start < h.start < end})]
    best = None
    for tau in points:
        gpu, cpu, mem = avail.free_after(avail.index_at(tau))
        for h in holds:
            if h.start <= tau < h.end:
                gpu, cpu, mem = gpu - h.gpu, cpu - h.cpu, mem - h.mem
        best = (gpu, cpu, mem) if best is None else (np.minimum(best[0], gpu), np.minimum(best[1], cpu),
                                                     np.minimum(best[2], mem))
    assert best is not None
    return np.maximum(best[0], 0), np.maximum(best[1], 0), np.maximum(best[2], 0)


@dataclass(frozen=True)
class ShadowReserver:
    name: str = "shadow"
    protect: int = 1
    depth: int = 8
    #: Conservative backfill: every job is placed against every other job's standing promise,
    #: so a job may move earlier (schedule compression) but never into another's promised slot.
    compress: bool = False

    def reserve(self, blocked: list[PendingJob], plan: Plan, ctx: CycleContext) -> list[Reservation]:
        if not blocked:
            return []
        avail = Availability.build(plan.table, [*ctx.running, *_just_placed(plan, ctx)], ctx.expected_end)
        n = len(plan.table)
        holds: list[tuple[Reservation, Hold]] = []
        previous = {r.job: r for r in ctx.previous_reservations}
        standing = self._standing_promises(blocked, previous, n, ctx) if self.compress else {}
        tried = 0
        for pj in blocked:
            if tried >= self.depth:
                break
            status = ctx.statuses.get(pj.job.id)
            if status is not None and status.code is StatusCode.UNRESOLVABLE:
                continue
            tried += 1
            first = not holds and not self.compress
            standing.pop(pj.job.id, None)
            others = [h for _, h in holds] + list(standing.values())
            found = self._earliest(pj, avail, others, ctx, first, previous.get(pj.job.id))
            if found is None:
                continue
            start, bindings = found
            if start <= ctx.now and not first:
                continue  # fits now without hurting earlier reservations: backfill will start it
            res = Reservation(pj.job.id, start, tuple(sorted({b.node for b in bindings})), bindings,
                              protected=len(holds) < self.protect)
            holds.append((res, Hold.of(bindings, n, start, start + ctx.planned_run(pj.job))))
            old = ctx.statuses.get(pj.job.id, Status(StatusCode.UNSCHEDULABLE, (), ctx.profile.name))
            when = f"reserved to start at t={start:.0f}s (in {start - ctx.now:.0f}s)"
            ctx.statuses[pj.job.id] = Status(old.code, (*old.reasons, when), old.policy, start)
        ctx.scratch[SCRATCH_KEY] = (avail, holds)
        return [r for r, _ in holds]

    def _standing_promises(self, blocked: list[PendingJob], previous: dict[str, Reservation], n: int,
                           ctx: CycleContext) -> dict[str, Hold]:
        """Last cycle's protected promises of jobs still waiting, as holds, in queue order."""
        wanted = {j for j, r in previous.items() if r.protected and r.start > ctx.now}
        out: dict[str, Hold] = {}
        for pj in blocked:
            if not wanted:
                break
            if pj.job.id in wanted:
                r = previous[pj.job.id]
                out[r.job] = Hold.of(r.bindings, n, r.start, r.start + ctx.planned_run(pj.job))
                wanted.discard(pj.job.id)
        return out

    def _earliest(self, pj: PendingJob, avail: Availability, holds: list[Hold], ctx: CycleContext,
                  first: bool, prev: Reservation | None) -> tuple[float, tuple[PodBinding, ...]] | None:
        job = pj.job
        table = avail.table

        def table_at(k: int, start: float | None = None) -> NodeTable:
            start = avail.start_of(k, ctx.now) if start is None else start
            gpu, cpu, mem = window_free(avail, holds, start, start + ctx.planned_run(job))
            return table.with_free(gpu, cpu, mem)

        def ok(k: int) -> bool:
            return _feasible(ctx, job, table_at(k))

        if prev is not None and prev.start >= ctx.now:
            # A promise stands while its own pods still fit at its time: keep the nodes and time.
            at = table_at(avail.index_at(prev.start), prev.start)
            if bindings_fit(at, prev.bindings):
                return prev.start, prev.bindings
        if not first and ok(0):
            return ctx.now, ()
        n = len(avail)
        if ok(n):
            lo, hi = min(1 if first else 0, n), n
            while lo < hi:
                mid = (lo + hi) // 2
                if not ok(mid):
                    lo = mid + 1
                else:
                    hi = mid
            fitted = _fit(ctx, job, table_at(lo))
            if not isinstance(fitted, Status):
                return avail.start_of(lo, ctx.now), fitted
        # Behind holds: once every running job has ended, the job can only start as holds end.
        last = avail.start_of(n, ctx.now)
        for end in sorted({h.end for h in holds if h.end > last}):
            fitted = _fit(ctx, job, table_at(n, end))
            if not isinstance(fitted, Status):
                return end, fitted
        return None


@dataclass(frozen=True)
class ReservationBackfill:
    name: str = "easy"
    max_tests: int = 2000

    def backfill(self, blocked: list[PendingJob], reservations: list[Reservation], plan: Plan,
                 ctx: CycleContext) -> PlaceOutcome:
        out = PlaceOutcome()
        avail, holds = ctx.scratch.get(SCRATCH_KEY, (None, []))
        protected = sorted(((r, h) for r, h in holds if r.protected), key=lambda rh: rh[0].start)
        starts = [r.start for r, _ in protected]
        limits = []
        for r, h in protected:
            gpu, cpu, mem = avail.free_after(avail.index_at(r.start))
            gpu, cpu, mem = gpu - h.gpu, cpu - h.cpu, mem - h.mem
            for r2, h2 in protected:
                if r2 is not r and h2.overlaps(r.start, r.start + 1e-6):
                    gpu, cpu, mem = gpu - h2.gpu, cpu - h2.cpu, mem - h2.mem
            limits.append([gpu, cpu, mem])
        reserved = {r.job for r, _ in protected}
        failed: dict[int, FailedShapes] = {}
        views: dict[int, NodeTable] = {}
        tests = 0

        def view(mode: int) -> NodeTable:
            if mode not in views:
                t = plan.table
                gpu, cpu, mem = t.gpu_free, t.cpu_free, t.mem_free
                for lim in limits[:mode]:
                    gpu, cpu, mem = np.minimum(gpu, lim[0]), np.minimum(cpu, lim[1]), np.minimum(mem, lim[2])
                views[mode] = t if mode == 0 else t.with_free(np.maximum(gpu, 0), np.maximum(cpu, 0),
                                                               np.maximum(mem, 0))
            return views[mode]

        for pj in blocked:
            job = pj.job
            if job.id in reserved:
                continue
            prior = ctx.statuses.get(job.id)
            if prior is not None and prior.code is StatusCode.UNRESOLVABLE:
                continue
            end = ctx.now + ctx.planned_run(job)
            mode = bisect.bisect_left(starts, end)
            known = failed.setdefault(mode, FailedShapes()).known_failure(job)
            if known is not None:
                ctx.skipped_by_class += 1
                ctx.statuses[job.id] = _keep_estimate(known, prior)
                continue
            if tests >= self.max_tests:
                break
            tests += 1
            ctx.considered += 1
            fitted = _fit(ctx, job, view(mode))
            if isinstance(fitted, Status):
                if mode > 0 and not isinstance(_fit(ctx, job, view(0)), Status):
                    r = protected[0][0]
                    fitted = Status(StatusCode.WAIT, (
                        f"fits now, but running until ~t={end:.0f}s it would delay "
                        f"the reservation for {r.job} at t={r.start:.0f}s",), self.name)
                failed[mode].record(job, fitted)
                ctx.statuses[job.id] = _keep_estimate(fitted, prior)
                continue
            for b in fitted:
                plan.bind(b)
            for lim in limits[:mode]:
                for b in fitted:
                    lim[0][b.node] -= b.request.gpus
                    lim[1][b.node] -= b.request.cpus
                    lim[2][b.node] -= b.request.memory_gb
            views.clear()
            out.started.append(job.id)
        return out
