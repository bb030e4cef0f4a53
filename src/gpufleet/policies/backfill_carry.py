"""EASY cycles carried on from the last one instead of run again, when a proof says they decide the same.

The rule ``run_incremental`` applies for a backfiller that declares ``continues_scan``
(engine/incremental.py, rule 4): ``ReservationBackfill.remember_scan`` keeps what the next cycle
needs after a full one, ``carry_scan`` answers from it or says no.

In a congested EASY run (gang-easy: strict-FIFO gang best fit, a protected reservation for the
head and estimates for the next jobs, backfill around them) a cycle runs at every arrival and every
finish, and most of them decide nothing new: the head fails again, reservation keeps the same
promises, backfill fails the same searches; the only news is a new job at the back of the queue,
or capacity freed that nobody waiting can use. This module proves when that is so and then carries
the last cycle on: the backfill scan's trace (``BackfillTrace``) is continued over the new jobs
(``policies/backfill_continue.py``), the reservations kept, no line logged for jobs whose verdict
keeps its shape. Otherwise the cycle runs in full (and its trace is the next one carried on).

State: the last full cycle C0 at t0, its reservations and scan trace; the *anchor*, the free
capacity and protected limits at which every failed search in the trace is known to fail with its
verdict (C0's scan start, moved to "now" whenever a carried-on cycle re-checks them all); ``taken``,
the nodes of every job started since C0's reserve step (C0's backfills, carried-on starts).
Between C0 and now only instants of arrivals and finishes passed, each carried on: any other news
(``CycleDelta.other``, ``nodes``, ``gap``) runs the full cycle, which starts a new memo.

Premises at an instant t whose news is finishes and/or arrivals (``carry_scan`` checks each):
1. Profile: gang-easy's phases, as its policies declare them (``CycleReuse.carry_scan``,
   engine/reuse.py); no tenancy; the driver's queue a ``PendingQueue`` and its running set
   columns (``CycleInput.running_columns``); every node capacity and every request the queue
   ever held a whole number (``PendingQueue.integral``), so sums taken in any order are the same
   floats.
2. Queue: every new job sorts after every waiting job (priority-FIFO key). C0 made ``depth``
   reservations (its reserve step tried ``depth`` jobs, all ahead of any new job, each holding
   one; the first is the head H, where the place step stopped), none for a job its backfill then
   started; no promise was due at t0.
3. Time: every reservation starts after t; every running job's planned end lay after t0 and
   lies after t (no release time moves with now: a job past its estimate "ends at now + 1", and
   one that ends after such a release was planned would not give back what C0's limits assumed);
   nobody is under notice; the tenants' accuracy multipliers (max(1, median)) are C0's.
4. Modes: no waiting candidate's planned end crossed a protected start since its mode was taken.
5. Cap: fewer than ``max_tests`` searches in all, counting the new jobs.
6. No reservation holds a node in ``taken``.
7. Finishes: H and every failed search fail now with a verdict of the same shape; a verdict of
   a mode above 0 also keeps its answer in mode 0 (a "fits now, but would delay" verdict still
   fits there, any other still does not, else the scan would now word it otherwise). A verdict
   made at the anchor whose fit counts on Δ (below) are the anchor's is the same verdict; any
   other is searched again now and renewed with now's numbers. Then the anchor moves to now.
   Arrivals only: on Δ, the nodes whose free capacity differs from the anchor's (capacity only
   shrank since), H's pods and each failed search's pods fit as many times now as at the anchor,
   in its mode's view (and mode 0's), by whole GPUs and by GPUs alone (the two numbers an
   UNSCHEDULABLE reason names).

Why the full cycle C at t decides the same:
- place: the jobs ahead of H are UNRESOLVABLE (against the empty fleet: unchanged); H fails
  again with a verdict of the same shape (7) and the pass stops at it.
- reserve: the same ``depth`` jobs in the same order (2), each keeping C0's reservation as a
  promise. The window capacity on a reservation's nodes is at least C0's: no release moved (3),
  finished jobs give theirs back earlier than C0 planned, started ones sit off every reserved
  node (6); a reservation's own bindings fit its C0 window (a whole-number fit proves it), so they
  fit C's; the holds are the same by induction. The protected limits are C0's but on the nodes of
  jobs started since (less what they take past the reservation's start: the scan's bookkeeping)
  and finished since (more what they held past it: ``give_back``) — exact by 1.
- backfill: the same candidates, order and modes (4), the same limits; each failed search fails
  again with a verdict of the same shape: checked (7, finishes: fit counts equal to the ones its
  verdict was made with mean the same verdict), or, when only arrivals came, what it saw lies
  between the anchor and now (capacity only shrank) and fit counts are monotone in capacity, so
  equal at both ends means equal throughout; so it kills the same classes and no old candidate
  starts; the cap is not reached (5). New jobs come last: ``continue_scan``.
- log: old jobs get verdicts of the shapes they had (numbers inside reasons move: a reservation's
  "in N s", "K pod(s) fit now"), and the decision log compares shapes without numbers
  (``status_shape``), so it writes nothing for them; new jobs' lines, starts and backfill lines
  are written by the same code as a full cycle's.
In verify mode the full cycle runs beside each carried-on one and the engine's check
(``engine.incremental.check``) compares them (tests, bench).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.incremental import CARRIED, CycleDelta, check
from gpufleet.engine.phases.order import OrderKey, order_key
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.queue import PendingQueue
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, status_shape
from gpufleet.engine.types import (
    BackfillTrace,
    CycleContext,
    CycleInput,
    CycleResult,
    CycleStats,
    Reservation,
)
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.policies.backfill_continue import (
    continue_scan,
    give_back,
    re_anchor,
    shrunk_alike,
    still_failing,
)


@dataclass(frozen=True)
class Remembered:
    """A full cycle's result kept for carrying on; the ``Carry`` is built from it at the first
    instant that could be carried on (most full cycles are followed by another full one)."""

    result: CycleResult
    t0: float
    #: Nodes whose free capacity C0's backfill changed (its starts).
    taken: np.ndarray
    multipliers: dict[str, float]
    earliest_end: float
    verify: bool


@dataclass
class Carry:
    """The last full cycle's decisions and scan, and what the carried-on cycles since changed
    (updated in place: a memo is consumed by the cycle it is handed to)."""

    trace: BackfillTrace
    reservations: tuple[Reservation, ...]
    head: Job
    #: Nodes any reservation holds; nodes of jobs started since C0's reserve step.
    held: np.ndarray
    taken: np.ndarray
    #: The largest order key among waiting jobs.
    last_key: OrderKey
    #: Per waiting backfill candidate: planned run, and the time its mode was taken.
    planned: np.ndarray
    since: np.ndarray
    #: The earliest planned end of a running job.
    earliest_end: float
    #: The accuracy multipliers planning used (tenant -> max(1, median), those above 1).
    multipliers: dict[str, float]
    #: C0's statuses and the carried-on verdicts since (kept only when verifying).
    statuses: dict | None = None


def remember_scan(inp: CycleInput, result: CycleResult, promises: int, verify: bool) -> Remembered | None:
    """After a full cycle on ``inp``: what a carried-on cycle needs, or None when premise 1 or 2
    fails at C0 already; the rest is built at the first carried-on cycle."""
    trace = result.backfill
    queue, table = inp.pending, inp.nodes
    if (trace is None or result.preemptions or len(result.reservations) != promises
            or inp.tenancy is not None or inp.running_columns is None
            or not isinstance(queue, PendingQueue) or not queue.integral
            or any(r.protected and r.start <= inp.now for r in inp.reservations)
            or not set(result.started).isdisjoint(r.job for r in result.reservations)
            or not _whole(table.cpu_total) or not _whole(table.mem_total)):
        return None  # (a reserved job backfilled in the same cycle leaves its place to the next one)
    # Premise 3 at t0, over the running jobs and C0's starts (they resume no progress: nothing is
    # requeued without a preemptor or failures, and either stops the carry).
    accuracy = _accuracy(inp)
    earliest_end = min([_earliest_end(inp)] + [inp.now + pj.job.estimate * max(1.0, accuracy.get(
        pj.job.tenant, 1.0)) for pj in map(queue.get, result.started) if pj is not None])
    if earliest_end <= inp.now:
        return None  # a job past its estimate: C0 planned its release at t0 + 1 s
    g, c, m = _free_after(table, result.bindings)
    g0, c0, m0 = trace.view0
    taken = (g0 != g) | (c0 != c) | (m0 != m)
    return Remembered(result, inp.now, taken, _multipliers(inp), earliest_end, verify)


def _free_after(table: NodeTable, bindings: tuple[PodBinding, ...]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The free GPUs, CPUs and memory once ``bindings`` are taken, as ``NodeTable.take`` leaves
    them: its arithmetic on three copied columns where no binding touches the per-GPU state (a
    fractional slot, or idle MIG-configured GPUs), else a copy of the table (a full cycle pays
    this: the cheap path matters)."""
    g, c, m = table.gpu_free.copy(), table.cpu_free.copy(), table.mem_free.copy()
    pg = table.per_gpu
    for b in bindings:
        r, n = b.request, b.node
        if pg is not None and r.is_fractional and b.slot is not None:
            break
        g[n] -= r.gpus
        c[n] -= r.cpus
        m[n] -= r.memory_gb
        if pg is not None and r.gpus > 0 and pg.idle_configured[n] > g[n]:
            break
    else:
        return g, c, m
    after = table.copy()
    for b in bindings:
        after.take(b.node, b.request, slot=b.slot)
    return after.gpu_free, after.cpu_free, after.mem_free


def _whole(x: np.ndarray) -> bool:
    return bool(np.all(np.mod(x, 1.0) == 0.0))


def _multipliers(inp: CycleInput) -> dict[str, float]:
    if not inp.profile.estimate_history:
        return {}
    return {t: m for t, v in inp.estimate_accuracy.items() if (m := max(1.0, v)) != 1.0}


def _accuracy(inp: CycleInput) -> dict[str, float]:
    return dict(inp.estimate_accuracy) if inp.profile.estimate_history else {}


def _earliest_end(inp: CycleInput) -> float:
    assert inp.running_columns is not None
    return inp.running_columns.earliest_planned_end(_accuracy(inp))


def _build(kept: Remembered, delta: CycleDelta, inp: CycleInput) -> Carry | None:
    result, multipliers = kept.result, kept.multipliers
    trace = result.backfill
    assert trace is not None and isinstance(inp.pending, PendingQueue)
    head = inp.pending.get(result.reservations[0].job)
    if head is None or trace.tests >= trace.max_tests:
        return None
    new = {j.id for j in delta.arrived}
    protected = {r.job for r in result.reservations if r.protected}
    keys: list[OrderKey] = []
    planned: list[float] = []
    for pj in inp.pending:
        job = pj.job
        if job.id in new:
            continue
        keys.append(order_key(job))
        if job.id not in protected:
            planned.append(job.estimate * multipliers.get(job.tenant, 1.0))
    held = np.zeros(len(inp.nodes), bool)
    for r in result.reservations:
        held[list(r.nodes)] = True
    p = np.asarray(planned, float)
    return Carry(trace, result.reservations, head.job, held, kept.taken, max(keys), p,
                 np.full(p.size, kept.t0), kept.earliest_end, multipliers,
                 dict(result.statuses) if kept.verify else None)


def carry_scan(state: Remembered | Carry, delta: CycleDelta, inp: CycleInput, verify: bool
               ) -> tuple[CycleResult, Carry] | None:
    """The cycle at ``inp`` (news: finishes and/or arrivals only), carried on from ``state``, and
    the state to keep; None when a premise does not hold (run the cycle)."""
    memo: Carry | None
    if isinstance(state, Remembered):
        memo = _build(state, delta, inp)
        if memo is None:
            return None
    else:
        memo = state
    finished, table = delta.ended, inp.nodes
    if finished and _multipliers(inp) != memo.multipliers:
        return None
    t, trace = inp.now, memo.trace
    arrivals = sorted(delta.arrived, key=order_key)
    if arrivals and order_key(arrivals[0]) <= memo.last_key:
        return None
    if finished:
        memo.earliest_end = _earliest_end(inp)
    assert inp.running_columns is not None
    if (min(r.start for r in memo.reservations) <= t or memo.earliest_end <= t
            or trace.tests + len(arrivals) >= trace.max_tests or inp.running_columns.any_evicting()
            or memo.taken[memo.held].any()):
        return None
    for s in trace.starts:
        if np.any((memo.since + memo.planned <= s) & (s < t + memo.planned)):
            return None  # a candidate's mode moved
    ctx = CycleContext(now=t, profile=inp.profile, rng=np.random.default_rng(inp.seed),
                       estimate_accuracy=_accuracy(inp), previous_reservations=memo.reservations)
    if finished:
        give_back(trace, finished, ctx)
        if not still_failing(trace, memo.head, table, ctx, status_shape):
            return None  # the limits and verdicts moved: this memo is spent
        re_anchor(trace, table)
    elif not shrunk_alike(trace, memo.head, table):
        return None
    started: list[JobId] = []
    verdicts: dict[JobId, Status] = {}
    bindings: tuple[PodBinding, ...] = ()
    if arrivals:
        plan = Plan(table)
        started, verdicts = continue_scan(trace, arrivals, plan, ctx)
        bindings = plan.commit()
    result = CycleResult(bindings=bindings, started=tuple(started), statuses=verdicts,
                         reservations=memo.reservations, admission=inp.admission,
                         stats=CycleStats(pending=len(inp.pending), reused=CARRIED))
    if verify:
        check(result, run_cycle(inp), where=f"t={t}: ", earlier=memo.statuses or {}, shape=status_shape)
    _after(memo, result, arrivals, ctx)
    return result, memo


def _after(memo: Carry, result: CycleResult, arrivals: list[Job], ctx: CycleContext) -> None:
    """Book what this carried-on cycle did: new waiting candidates, started nodes and ends."""
    started = set(result.started)
    waiting = [j for j in arrivals if j.id not in started]
    if waiting:
        memo.last_key = max(memo.last_key, order_key(waiting[-1]))
        memo.planned = np.concatenate([memo.planned, [ctx.planned_run(j) for j in waiting]])
        memo.since = np.concatenate([memo.since, np.full(len(waiting), ctx.now)])
    for b in result.bindings:
        memo.taken[b.node] = True
    for j in arrivals:
        if j.id in started:
            memo.earliest_end = min(memo.earliest_end, ctx.now + ctx.planned_run(j))
    if memo.statuses is not None:
        memo.statuses.update(result.statuses)
