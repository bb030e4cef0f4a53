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
overlap). A (class, mode) that failed is not searched again this cycle, a class the place step
already found UNRESOLVABLE (``Handoffs.unresolvable``) is settled by that verdict without a search
(reserve skips it too), and at most ``max_tests`` fit searches run per cycle (Slurm's
``bf_max_job_test``), in queue order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gpufleet.engine.capacity import CapacityTimeline, Hold, release_schedule
from gpufleet.engine.fit import need_met, node_need
from gpufleet.engine.incremental import CycleDelta
from gpufleet.engine.phases.place import PlaceOutcome
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.queue import QueueView
from gpufleet.engine.reuse import Reuse
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusBoard, StatusCode
from gpufleet.engine.types import (
    BackfillTrace,
    CycleContext,
    CycleInput,
    CycleResult,
    PendingJob,
    Reservation,
    ReservationPlan,
    RunningJob,
    ScanFailure,
)
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.shape_key import ShapeKey
from gpufleet.policies.backfill_carry import Carry, Remembered, carry_scan, remember_scan
from gpufleet.policies.backfill_limits import (
    UNEXAMINED,
    delay_status,
    feasible,
    limited_view,
    take_from_limits,
)
from gpufleet.policies.shapes import Dominance, known_unresolvable


def _fit(ctx: CycleContext, job: Job, table: NodeTable) -> tuple[PodBinding, ...] | Status:
    return ctx.profile.placer.fit(job, table, ctx)


def _just_placed(plan: Plan, ctx: CycleContext) -> list[RunningJob]:
    """This cycle's placements as running jobs, so their ends free capacity in the schedule."""
    placed_now = ctx.handoff.placed_now
    if not placed_now:
        return []
    by_job: dict[str, list[PodBinding]] = {}
    for b in plan.commit():
        by_job.setdefault(b.job, []).append(b)
    return [RunningJob(j, ctx.now, tuple(by_job.get(j.id, ()))) for j in placed_now]


def window_free(avail: CapacityTimeline, holds: list[Hold], start: float, end: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node, the capacity free throughout [start, end) (``CapacityTimeline.free_throughout``)."""
    return avail.free_throughout(holds, start, end)


def bindings_fit_throughout(avail: CapacityTimeline, holds: list[Hold], start: float, end: float,
                            bindings: tuple[PodBinding, ...]) -> bool:
    """Do these exact pods fit what is free throughout [start, end)? The one predicate
    (engine/fit.py ``need_met``) on the bindings' nodes only, against ``free_throughout_on``
    (equal element for element to ``window_free``'s columns, clamp at zero included) and the
    table's schedulable mask: the answer ``bindings_fit`` gives on the whole window table, without
    building the whole fleet's window columns for one promise."""
    per_node = node_need(bindings)
    nodes = np.fromiter(per_node, np.int64, len(per_node))
    gpu, cpu, mem = avail.free_throughout_on(holds, start, end, nodes)
    return need_met(per_node.values(), avail.table.schedulable[nodes].tolist(), gpu.tolist(),
                    cpu.tolist(), mem.tolist())


@dataclass(frozen=True)
class ShadowReserver:
    name: str = "shadow"
    protect: int = 1
    depth: int = 8
    #: Conservative backfill: every job is placed against every other job's standing promise,
    #: so a job may move earlier (schedule compression) but never into another's promised slot.
    compress: bool = False
    #: A promise stands while its pods still fit at its time. False rebuilds the plan from
    #: scratch every cycle, as Slurm's backfill does (no promise outlives its pass).
    keep_promises: bool = True
    #: No job is planned to start later than this many seconds from now (Slurm's ``bf_window``):
    #: a job whose earliest start lies beyond it gets no reservation this cycle.
    window_s: float = math.inf
    #: Slurm's ``bf_resolution``: its backfill map holds a planned job's nodes from its start to
    #: its end, both rounded *down* to a multiple of this many epoch seconds (backfill.c:
    #: ``start_time = (start_time / backfill_resolution) * backfill_resolution``, likewise
    #: ``end_reserve``), while the start it reports stays exact. So a backfill job that would end
    #: in the last (start mod resolution) seconds before a planned start is refused. 0: exact.
    resolution_s: float = 0.0
    #: Epoch second of sim time 0, so the grid falls on Slurm's (whole multiples of epoch time).
    resolution_epoch_s: float = 0.0

    def reuse(self) -> Reuse:
        """Promises kept with no window, grid or compression stand while nothing they rest on
        moved (policies/backfill_carry.py checks what moved); any of those makes them depend on now."""
        if (self.keep_promises and not self.compress and self.protect >= 1 and math.isinf(self.window_s)
                and self.resolution_s <= 0):
            return Reuse(promises=self.depth)
        return Reuse()

    def _grid(self, t: float) -> float:
        """``t`` rounded down to the bf_resolution grid (unchanged when the resolution is 0)."""
        if self.resolution_s <= 0 or not math.isfinite(t):
            return t
        e = self.resolution_epoch_s
        return math.floor((t + e) / self.resolution_s) * self.resolution_s - e

    def reserve(self, blocked: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> list[Reservation]:
        if not blocked:
            return []
        avail = CapacityTimeline(plan.table, release_schedule(ctx, _just_placed(plan, ctx)))
        n = len(plan.table)
        holds: list[tuple[Reservation, Hold]] = []
        previous = {r.job: r for r in ctx.previous_reservations} if self.keep_promises else {}
        standing = self._standing_promises(blocked, previous, n, ctx) if self.compress else {}
        tried = 0
        unresolvable = ctx.handoff.unresolvable
        for pj in blocked:
            if tried >= self.depth:
                break
            status = ctx.statuses.get(pj.job.id)
            if status is not None and status.code is StatusCode.UNRESOLVABLE:
                continue
            if unresolvable and known_unresolvable(pj.job.shape_key, unresolvable) is not None:
                continue  # its class fits no fleet state (the place step's verdict)
            tried += 1
            first = not holds and not self.compress
            standing.pop(pj.job.id, None)
            others = [h for _, h in holds] + list(standing.values())
            found = self._earliest(pj, avail, others, ctx, first, previous.get(pj.job.id))
            if found is None or found[0] - ctx.now > self.window_s:
                continue
            start, bindings = found
            if start <= ctx.now and not first:
                continue  # fits now without hurting earlier reservations: backfill will start it
            res = Reservation(pj.job.id, start, tuple(sorted({b.node for b in bindings})), bindings,
                              protected=len(holds) < self.protect)
            holds.append((res, Hold.of(bindings, n, self._grid(start),
                                       self._grid(start + ctx.planned_run(pj.job)), pj.job.id)))
            when = f"reserved to start at t={start:.0f}s (in {start - ctx.now:.0f}s)"
            ctx.statuses.note(pj.job.id, when, ctx.profile.name, estimated_start=start)
        ctx.handoff.reservation_plan = ReservationPlan(avail, holds)
        return [r for r, _ in holds]

    def _standing_promises(self, blocked: Sequence[PendingJob], previous: dict[JobId, Reservation], n: int,
                           ctx: CycleContext) -> dict[str, Hold]:
        """Last cycle's protected promises of jobs still waiting, as holds, in queue order."""
        wanted = {j for j, r in previous.items() if r.protected and r.start > ctx.now}
        out: dict[str, Hold] = {}
        for pj in blocked:
            if not wanted:
                break
            if pj.job.id in wanted:
                r = previous[pj.job.id]
                out[r.job] = Hold.of(r.bindings, n, r.start, r.start + ctx.planned_run(pj.job), r.job)
                wanted.discard(pj.job.id)
        return out

    def _earliest(self, pj: PendingJob, avail: CapacityTimeline, holds: list[Hold], ctx: CycleContext,
                  first: bool, prev: Reservation | None) -> tuple[float, tuple[PodBinding, ...]] | None:
        job = pj.job
        table = avail.table

        def table_at(k: int, start: float | None = None) -> NodeTable:
            start = avail.start_of(k, ctx.now) if start is None else start
            gpu, cpu, mem = window_free(avail, holds, start, start + ctx.planned_run(job))
            return table.with_free(gpu, cpu, mem)

        def ok(k: int) -> bool:
            return feasible(ctx, job, table_at(k))

        # A promise stands while its own pods still fit at its time: keep the nodes and time.
        if prev is not None and prev.start >= ctx.now and bindings_fit_throughout(
                avail, holds, prev.start, prev.start + ctx.planned_run(job), prev.bindings):
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

    def reuse(self) -> Reuse:
        return Reuse(continues_scan=True)

    def remember_scan(self, inp: CycleInput, result: CycleResult, promises: int, verify: bool
                      ) -> Remembered | None:
        """What a later cycle needs to carry this scan on (policies/backfill_carry.py)."""
        return remember_scan(inp, result, promises, verify)

    def carry_scan(self, state: object, delta: CycleDelta, inp: CycleInput, verify: bool
                   ) -> tuple[CycleResult, Carry] | None:
        """The cycle at ``inp`` carried on from ``state``, or None (policies/backfill_carry.py)."""
        assert isinstance(state, Remembered | Carry)
        return carry_scan(state, delta, inp, verify)

    def backfill(self, blocked: Sequence[PendingJob], reservations: list[Reservation], plan: Plan,
                 ctx: CycleContext) -> PlaceOutcome:
        out = PlaceOutcome()
        schedule = ctx.handoff.reservation_plan
        holds = schedule.holds if schedule is not None else []
        protected = sorted(((r, h) for r, h in holds if r.protected), key=lambda rh: rh[0].start)
        starts = [r.start for r, _ in protected]
        limits = []
        if schedule is not None:
            protected_holds = [h for _, h in protected]
            limits = [schedule.timeline.limit_for(h, protected_holds) for h in protected_holds]
        reserved = {r.job for r, _ in protected}
        views: dict[int, NodeTable] = {}

        def view(mode: int) -> NodeTable:
            if mode not in views:
                views[mode] = limited_view(plan.table, limits, mode)
            return views[mode]

        statuses = ctx.statuses
        # Left out of the scan: protected reservations, and jobs an earlier phase found
        # UNRESOLVABLE. Jobs of a class the place step found UNRESOLVABLE that it never reached
        # (behind the first blocked job) stay candidates, but their class is settled before the
        # scan by the place step's verdict (``Handoffs.unresolvable``), so none is searched again.
        skip = reserved | {j for j, st in statuses.items() if _unresolvable(st)}
        # The queue's columns (a list is read into them once): no Python step per candidate.
        qv = QueueView.of(blocked)
        if skip:
            keep = np.ones(len(qv), bool)
            keep[qv.positions_of(skip)] = False
            qv = qv.take(np.flatnonzero(keep))
        cands = _ViewJobs(qv)
        scan = _Scan.from_view(qv, starts, ctx)
        scan.settle_unresolvable(ctx.handoff.unresolvable)
        t0 = plan.table
        trace = BackfillTrace(
            tuple(starts), protected[0][0] if protected else None,
            (t0.gpu_free.copy(), t0.cpu_free.copy(), t0.mem_free.copy()),
            [[a.copy() for a in lim] for lim in limits], limits,
            tuple(ctx.handoff.unresolvable.items()), [], 0, self.max_tests, self.name)
        while True:
            k = scan.next_alive()
            if k is None or scan.tests >= self.max_tests:
                break
            job, mode = cands[k], int(scan.mode[k])
            scan.tests += 1
            ctx.out.considered += 1
            fitted = _fit(ctx, job, view(mode))
            if isinstance(fitted, Status) and fitted.code is StatusCode.WAIT:
                scan.wait(k, fitted)  # the placer's own choice for this job: not a class verdict
                continue
            if isinstance(fitted, Status):
                planned = None
                # Only "would it fit the unlimited view?" matters here: the placer's cheap
                # yes/no answers it where it can (``feasible``: the same answer as ``fit``).
                if mode > 0 and feasible(ctx, job, view(0)):
                    planned = float(scan.planned[k])
                    fitted = delay_status(ctx.now + planned, protected[0][0], self.name)
                scan.fail(k, fitted)
                trace.failures.append(ScanFailure(scan.classes[int(scan.cls[k])], mode, fitted, job, planned))
                continue
            if trace.anchored < 0:
                trace.anchored = len(trace.failures)
            for b in fitted:
                plan.bind(b)
            take_from_limits(limits, mode, fitted)
            views.clear()
            scan.started(k)
            out.started.append(job.id)
        ctx.out.skipped_by_class += scan.write_statuses(cands, statuses)
        trace.tests = scan.tests
        if trace.anchored < 0:
            trace.anchored = len(trace.failures)
        ctx.out.backfill = trace
        return out


class _ViewJobs:
    """Backfill candidates over a queue view: ``jobs[k]`` is the k-th candidate's Job."""

    __slots__ = ("view",)

    def __init__(self, view: QueueView) -> None:
        self.view = view

    def __len__(self) -> int:
        return len(self.view)

    def __getitem__(self, k: int) -> Job:
        return self.view[k].job

    def ids(self, positions: np.ndarray) -> list[JobId]:
        return self.view.take(positions).ids()


def _unresolvable(status: Status | None) -> bool:
    return status is not None and status.code is StatusCode.UNRESOLVABLE


class _Scan:
    """The bounded, class-aware walk over backfill candidates, in queue order.

    Each candidate has a class (its shape key) and a mode (how many protected reservations start
    before its planned end: mode m sees the free capacity capped by the first m limits, so a
    higher mode never sees more). A failed (class, mode) kills every candidate whose class
    dominates it, in that mode and every higher one. The walk jumps from one live candidate to the
    next with a numpy mask, so 100,000 candidates cost a few vector operations per fit search,
    not a Python step each.
    """

    def __init__(self, classes: list[ShapeKey], cls: np.ndarray, mode: np.ndarray, planned: np.ndarray,
                 end: np.ndarray, n_modes: int) -> None:
        self.classes = classes
        self.cls = cls
        self.mode = mode
        self.planned = planned
        self.end = end
        self.n_modes = n_modes
        self.combo = cls * n_modes + mode
        self.dead = np.zeros(len(classes) * n_modes, bool)
        self.why: dict[int, Status] = {}
        self.done = np.zeros(cls.size, bool)
        self.was_started = np.zeros(cls.size, bool)
        self.own: dict[int, Status] = {}
        self.alive_idx = np.arange(cls.size)
        self.pos = 0
        self.tests = 0
        #: Which classes dominate which (built at the first failure: most scans have few).
        self.dominance: Dominance | None = None

    @classmethod
    def from_view(cls, view: QueueView, starts: list[float], ctx: CycleContext) -> _Scan:
        """``build`` from a queue view's columns. Classes are the view's own, renumbered densely
        (the queue may remember shapes no candidate has; a failure is checked against each)."""
        all_classes, cls_col = view.classes, view.cls
        present = np.flatnonzero(np.bincount(cls_col, minlength=len(all_classes)))
        remap = np.zeros(len(all_classes), np.int64)
        remap[present] = np.arange(present.size)
        planned = view.planned(ctx.estimate_accuracy)
        end = ctx.now + planned
        mode = np.searchsorted(np.asarray(starts, float), end, side="left") if starts \
            else np.zeros(len(view), np.int64)
        return cls([all_classes[c] for c in present.tolist()], remap[cls_col], mode.astype(np.int64),
                   planned, end, len(starts) + 1)

    def settle_unresolvable(self, verdicts: Mapping[ShapeKey, Status]) -> None:
        """Kill, in every mode, each class that equals or dominates a class the place step found
        UNRESOLVABLE, with that verdict: no view of the fleet (however many limits cap it) can
        fit a shape that not even the empty fleet fits."""
        if not verdicts:
            return
        for d, key in enumerate(self.classes):
            status = known_unresolvable(key, verdicts)
            if status is None:
                continue
            for mm in range(self.n_modes):
                combo = d * self.n_modes + mm
                if not self.dead[combo]:
                    self.dead[combo] = True
                    self.why[combo] = status
        self.alive_idx = np.flatnonzero(~self.dead[self.combo])
        self.pos = 0

    def next_alive(self) -> int | None:
        while self.pos < self.alive_idx.size:
            k = int(self.alive_idx[self.pos])
            self.pos += 1
            if not self.done[k] and not self.dead[self.combo[k]]:
                return k
        return None

    def fail(self, k: int, status: Status) -> None:
        c, m = int(self.cls[k]), int(self.mode[k])
        if self.dominance is None:
            self.dominance = Dominance(self.classes)
        for d in self.dominance.over(c):
            for mm in range(m, self.n_modes):
                combo = d * self.n_modes + mm
                if not self.dead[combo]:
                    self.dead[combo] = True
                    self.why[combo] = status
        self.done[k] = True
        rest = np.flatnonzero(~self.dead[self.combo[k + 1:]]) + k + 1
        self.alive_idx, self.pos = rest, 0

    def started(self, k: int) -> None:
        self.done[k] = True
        self.was_started[k] = True

    def wait(self, k: int, status: Status) -> None:
        """This candidate chose to wait (its own pricing); others of its class stay alive."""
        self.done[k] = True
        self.own[k] = status

    def write_statuses(self, jobs: _ViewJobs, statuses: StatusBoard) -> int:
        """Every candidate not started gets its class's failure (its own, if it was searched),
        or 'not examined'; returns how many were settled by class without a search of their own.
        The verdicts are chained after what earlier phases found (a reserved job keeps the start
        estimate the reservation schedule gave it: ``engine.status.merge``)."""
        waiting = np.flatnonzero(~self.was_started)
        skipped = int(np.count_nonzero(~self.done[waiting] & self.dead[self.combo[waiting]]))
        combo, why, own = self.combo[waiting], dict(self.why), dict(self.own)

        def verdicts() -> tuple[list[JobId], list[Status]]:
            by_combo = np.full(self.dead.size, UNEXAMINED, dtype=object)
            for c, status in why.items():
                by_combo[c] = status
            verdict_list = by_combo[combo].tolist()
            keep = [i for i, k in enumerate(waiting.tolist()) if k not in own] if own else None
            ids = jobs.ids(waiting)
            if keep is not None:
                ids, verdict_list = [ids[i] for i in keep], [verdict_list[i] for i in keep]
            ids += [jobs[k].id for k in own]
            verdict_list += list(own.values())
            return ids, verdict_list

        statuses.record_later(verdicts)
        return skipped
