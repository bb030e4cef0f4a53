"""EASY cycles carried on from the last one instead of run again, when a proof says they decide the same.

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
Between C0 and now only instants of arrivals and finishes passed, each carried on: the driver
drops the carry at any other change, and at a change with no cycle run (sim/step.py).

Premises at an instant t whose news is finishes and/or arrivals (``carry_on`` checks each):
1. Profile: gang-easy's phases, as its policies declare them (``CycleReuse.carry_scan``,
   engine/reuse.py); no failures, cycle cadence or tenancy;
   every capacity and request a whole number (``integral_resources``), so sums taken in any order
   are the same floats.
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
  and finished since (more what they held past it: ``_give_back``) — exact by 1.
- backfill: the same candidates, order and modes (4), the same limits; each failed search fails
  again with a verdict of the same shape: checked (7, finishes: fit counts equal to the ones its
  verdict was made with mean the same verdict), or, when only arrivals came, what it saw lies
  between the anchor and now (capacity only shrank) and fit counts are monotone in capacity, so
  equal at both ends means equal throughout; so it kills the same classes and no old candidate
  starts; the cap is not reached (5). New jobs come last: ``continue_scan``.
- log: old jobs get verdicts of the shapes they had (numbers inside reasons move: a reservation's
  "in N s", "K pod(s) fit now"), and the decision log compares shapes without numbers
  (sim/decisions.py), so it writes nothing for them; new jobs' lines, starts and backfill lines
  are written by the same code as a full cycle's.
With ``verify_carry`` the full cycle runs beside each carried-on one and the engine's verify check
(``engine.incremental.check``) compares them (tests, bench).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.incremental import check
from gpufleet.engine.phases.order import OrderKey, order_key
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.status import Status
from gpufleet.engine.types import BackfillTrace, CycleContext, CycleResult, Reservation
from gpufleet.model.fleet import Fleet
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.policies.backfill_continue import (
    continue_scan,
    give_back,
    re_anchor,
    shrunk_alike,
    still_failing,
)
from gpufleet.sim.decisions import status_shape
from gpufleet.sim.kernel import Outcome
from gpufleet.sim.state import SimState, cycle_input


def integral_resources(fleet: Fleet, jobs: Sequence[Job]) -> bool:
    """Every node's CPU and memory and every pod's request a whole number (GPUs always are)."""
    def whole(x: float) -> bool:
        return float(x).is_integer()
    return (all(whole(n.cpus) and whole(n.memory_gb) for n in fleet.nodes)
            and all(whole(ps.request.cpus) and whole(ps.request.memory_gb) and whole(ps.request.gpus)
                    for job in jobs for ps in job.pod_sets))


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


@dataclass
class Carry:
    """The last full cycle's decisions and scan, and what the carried-on cycles since changed."""

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


def remember(st: SimState, result: CycleResult, due: bool) -> None:
    """After a full cycle (its decisions applied): keep what a carried-on cycle needs; the rest is
    built at the first carried-on cycle."""
    st.carry = None
    cfg = st.cfg
    trace = result.backfill
    if (not cfg.carry_on or due or trace is None or result.preemptions
            or len(result.reservations) != cfg.reuse.promises
            or not set(result.started).isdisjoint(r.job for r in result.reservations)):
        return  # (a reserved job backfilled in the same cycle leaves its place to the next one)
    earliest_end = _earliest_end(st)
    if earliest_end <= st.t:
        return  # a job past its estimate: C0 planned its release at t0 + 1 s (premise 3 at t0)
    table = st.cluster.table
    g0, c0, m0 = trace.view0
    taken = (g0 != table.gpu_free) | (c0 != table.cpu_free) | (m0 != table.mem_free)
    st.carry = Remembered(result, st.t, taken, _multipliers(st), earliest_end)


def _multipliers(st: SimState) -> dict[str, float]:
    if not st.cfg.profile.estimate_history:
        return {}
    return {t: m for t, v in st.accuracy.medians().items() if (m := max(1.0, v)) != 1.0}


def _accuracy(st: SimState) -> dict[str, float]:
    return st.accuracy.medians() if st.cfg.profile.estimate_history else {}


def _build(st: SimState, kept: Remembered) -> Carry | None:
    result, multipliers = kept.result, kept.multipliers
    trace = result.backfill
    assert trace is not None
    cluster = st.cluster
    head = cluster.pending.get(result.reservations[0].job)
    if head is None or trace.tests >= trace.max_tests:
        return None
    new = {j.id for j in st.arrived_now}
    protected = {r.job for r in result.reservations if r.protected}
    keys: list[OrderKey] = []
    planned: list[float] = []
    for jid, job in cluster.pending.items():
        if jid in new:
            continue
        keys.append(order_key(job))
        if jid not in protected:
            planned.append(job.estimate * multipliers.get(job.tenant, 1.0))
    held = np.zeros(len(cluster.table), bool)
    for r in result.reservations:
        held[list(r.nodes)] = True
    p = np.asarray(planned, float)
    return Carry(trace, result.reservations, head, held, kept.taken, max(keys), p,
                 np.full(p.size, kept.t0), kept.earliest_end, multipliers,
                 dict(result.statuses) if st.cfg.verify_carry else None)


def _earliest_end(st: SimState) -> float:
    return st.cluster.running.columns.earliest_planned_end(_accuracy(st))


def carry_on(st: SimState, outcome: Outcome) -> CycleResult | None:
    """The cycle at this instant (news: finishes and/or arrivals), carried on from the last one;
    None when a premise does not hold (run the cycle)."""
    memo = st.carry
    if (memo is None or st.fail is not None or st.cfg.cycle_interval_s > 0 or st.cfg.tenancy is not None
            or outcome & Outcome.CYCLE_DUE or (outcome & Outcome.CHANGED and not st.finished_now)):
        return None
    finished = st.finished_now
    if isinstance(memo, Remembered):
        memo = st.carry = _build(st, memo)
        if memo is None:
            return None
    if finished and _multipliers(st) != memo.multipliers:
        return None
    t, trace, cluster = st.t, memo.trace, st.cluster
    arrivals = sorted(st.arrived_now, key=order_key)
    if arrivals and order_key(arrivals[0]) <= memo.last_key:
        return None
    if finished:
        memo.earliest_end = _earliest_end(st)
    if (min(r.start for r in memo.reservations) <= t or memo.earliest_end <= t
            or trace.tests + len(arrivals) >= trace.max_tests or cluster.running.columns.any_evicting()
            or memo.taken[memo.held].any()):
        return None
    for s in trace.starts:
        if np.any((memo.since + memo.planned <= s) & (s < t + memo.planned)):
            return None  # a candidate's mode moved
    seq = st.cycle_seq + 1  # the sequence number the full cycle at this instant would get
    ctx = CycleContext(now=t, profile=st.cfg.profile, rng=np.random.default_rng(st.cfg.seed + seq),
                       estimate_accuracy=_accuracy(st), previous_reservations=memo.reservations)
    if finished:
        give_back(trace, finished, ctx)
        if not still_failing(trace, memo.head, cluster.table, ctx, status_shape):
            st.carry = None  # the limits and verdicts moved: this memo is spent
            return None
        re_anchor(trace, cluster.table)
    elif not shrunk_alike(trace, memo.head, cluster.table):
        return None
    started: list[JobId] = []
    verdicts: dict[JobId, Status] = {}
    bindings: tuple[PodBinding, ...] = ()
    if arrivals:
        plan = Plan(cluster.table)
        started, verdicts = continue_scan(trace, arrivals, plan, ctx)
        bindings = plan.commit()
    result = CycleResult(bindings=bindings, started=tuple(started), statuses=verdicts,
                         reservations=memo.reservations, admission=st.admission)
    if st.cfg.verify_carry:  # the full cycle too, with the seed (``seq``) it would have run with
        check(result, run_cycle(cycle_input(st, st.cluster.pending_view(), seq)), where=f"t={st.t}: ",
              earlier=memo.statuses or {}, shape=status_shape)
    _after(memo, result, arrivals, ctx)
    return result


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
