"""Arrival-only cycles under EASY backfill, carried on from the last cycle instead of run again.

In a congested EASY run (gang-easy: strict-FIFO gang best fit, a protected reservation for the
head and estimates for the next jobs, backfill around them) about half the cycles follow
arrivals alone. Run in full, such a cycle walks the same queue over nearly the same fleet: the
head fails again, reservation keeps the same promises, backfill fails the same searches, and only
the new jobs are news. This module decides when that is provably so, and then carries the last
cycle's backfill scan on over the new jobs (``policies/backfill_continue.py``) instead.

The last full cycle C0 ran at t0; the trace of its scan (``BackfillTrace``) is kept with what
the driver knows happened since: arrivals only (every instant since brought nothing else:
``Outcome.ARRIVED``) and the starts of carried-on cycles. At an arrival-only instant t, the full
cycle C at t decides what C0's decisions and the carried-on scan decide, when:

1. Profile: gang-easy's phases exactly (``easy_profile``); no failures, cycle cadence or
   tenancy; every capacity and request a whole number (``integral_resources``), so sums taken in
   any order are the same floats.
2. Queue: every new job sorts after every waiting job (priority-FIFO key). C0 made ``depth``
   reservations, so its reserve step tried ``depth`` jobs ahead of the new ones and each holds
   one; the first is the job the place step stopped at (the head H); no promise was due at t0.
3. Time: every reservation starts after t and every running job's planned end lies after t, so
   no release time moves with ``now`` (a job past its estimate "ends at now + 1") and no promise
   comes due; no job is under notice.
4. Modes: no waiting candidate's planned end, between the time its mode was taken and t, crossed
   a protected start: every candidate keeps its mode.
5. Cap: fewer than ``max_tests`` searches in all, counting the new jobs.
6. Capacity: let Δ be the nodes whose free capacity differs from what C0's scan began with (the
   nodes of the jobs started since: C0's backfills and carried-on starts; nothing was freed). No
   reservation holds a node of Δ; on Δ, H's pods and every failed search's pods fit as many times
   now as when the scan began, in the view of its mode (and of mode 0 for a "fits now, but would
   delay" verdict), counting also the GPU-only fit that an UNSCHEDULABLE reason names.

Why C then decides the same:
- place: the jobs ahead of H are UNRESOLVABLE (against the empty fleet: unchanged); H fails
  again with the same reason, since its pods fit per node as before (on Δ by 6, elsewhere nothing
  changed), and the pass stops at it.
- reserve: the same ``depth`` jobs are tried in order (2). Each keeps C0's reservation as a
  promise: the release schedule differs from C0's only by the jobs started since, whose pods sit
  on Δ (3: nothing else moves), so the capacity over any window is the same on every
  reservation's nodes (6), and a reservation's own bindings fit its window (a whole-number fit
  proves it); the holds are the same by induction. On Δ a start since lowers a protected limit
  by its usage exactly when it runs past the reservation's start (else its release gives it back
  first) — what the scan's own limit bookkeeping subtracts, so the kept limits are C's (1).
- backfill: the same candidates in the same order and modes (4). Each mode's view is C0's off Δ;
  on Δ capacity only shrank, so what a search saw in C0 lies between the view at the scan's start
  and the view now, and fit counts are monotone in capacity: equal at both ends (6) means each
  search fails as it did with the same verdict, kills the same classes, and no old candidate
  starts. The cap is not reached (5). The new jobs come last, after all of it: ``continue_scan``.
- statuses and log: every old job gets C0's verdict but for numbers that move with ``now`` (a
  reservation's "in N s", a delay verdict's "running until ~t"), and the decision log compares
  shapes without numbers (sim/decisions.py), so it writes nothing for them; the new jobs' lines,
  starts and backfill lines are written by the same code as a full cycle's.
``verify`` runs the full cycle beside a carried-on one and compares (tests, bench).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.phases.admit import AdmitAll
from gpufleet.engine.phases.order import PriorityFifo
from gpufleet.engine.phases.preempt import NoPreemption
from gpufleet.engine.plan import Plan
from gpufleet.engine.profile import Profile
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import BackfillTrace, CycleContext, CycleResult, Reservation
from gpufleet.model.fleet import Fleet
from gpufleet.model.job import Job, PodRequest
from gpufleet.policies.backfill import ReservationBackfill, ShadowReserver, limited_view
from gpufleet.policies.backfill_continue import continue_scan
from gpufleet.policies.gang import GangBestFit
from gpufleet.sim.decisions import _shape
from gpufleet.sim.shape_queues import OrderKey, order_key
from gpufleet.sim.state import SimState


def easy_profile(profile: Profile) -> bool:
    """Gang-easy's phases exactly (the ones the proof covers): strict-FIFO gang best fit in
    priority-FIFO order, everyone admitted, a shadow reservation that keeps its promises with no
    window, grid or compression, reservation backfill, no preemption."""
    p, r = profile, profile.reserver
    return (type(p.placer) is GangBestFit and p.placer.stop_at_first_blocked and not p.placer.defer
            and p.gang and type(p.orderer) is PriorityFifo and type(p.admitter) is AdmitAll
            and type(r) is ShadowReserver and r.keep_promises and not r.compress and r.protect >= 1
            and math.isinf(r.window_s) and r.resolution_s <= 0
            and type(p.backfiller) is ReservationBackfill and type(p.preemptor) is NoPreemption)


def integral_resources(fleet: Fleet, jobs: Sequence[Job]) -> bool:
    """Every node's CPU and memory and every pod's request a whole number (GPUs always are)."""
    def whole(x: float) -> bool:
        return float(x).is_integer()
    return (all(whole(n.cpus) and whole(n.memory_gb) for n in fleet.nodes)
            and all(whole(ps.request.cpus) and whole(ps.request.memory_gb) and whole(ps.request.gpus)
                    for job in jobs for ps in job.pod_sets))


@dataclass
class Carry:
    """The last full cycle's scan, and what the carried-on cycles since added to it."""

    trace: BackfillTrace
    reservations: tuple[Reservation, ...]
    head: Job
    #: Nodes any reservation holds.
    held: np.ndarray
    #: The largest order key among waiting jobs.
    last_key: OrderKey
    #: Per waiting backfill candidate: planned run, and the time its mode was taken.
    planned: np.ndarray
    since: np.ndarray
    #: The earliest planned end of a running job.
    earliest_end: float
    #: C0's statuses (kept only when verifying).
    statuses: dict | None = None


def remember(st: SimState, result: CycleResult, due: bool) -> None:
    """After a full cycle: keep what a carried-on cycle needs (built at its first use)."""
    st.carry = None
    cfg = st.cfg
    if cfg.easy is None:
        cfg.easy = easy_profile(cfg.profile)
    if (not cfg.easy or not cfg.integral or due or result.backfill is None or result.preemptions
            or len(result.reservations) != cfg.profile.reserver.depth):  # type: ignore[attr-defined]
        return
    st.carry = (result, st.t)


def _build(st: SimState, result: CycleResult, t0: float) -> Carry | None:
    trace = result.backfill
    assert trace is not None
    cluster = st.cluster
    head_id = result.reservations[0].job
    head = cluster.pending.get(head_id)
    if head is None or trace.tests >= trace.max_tests:
        return None
    new = {j.id for j in st.arrived_now}
    protected = {r.job for r in result.reservations if r.protected}
    acc = _accuracy(st)
    keys: list[OrderKey] = []
    planned: list[float] = []
    for jid, job in cluster.pending.items():
        if jid in new:
            continue
        keys.append(order_key(job))
        if jid not in protected:
            planned.append(job.estimate * max(1.0, acc.get(job.tenant, 1.0)))
    held = np.zeros(len(cluster.table), bool)
    for r in result.reservations:
        held[list(r.nodes)] = True
    p = np.asarray(planned, float)
    return Carry(trace, result.reservations, head, held, max(keys), p, np.full(p.size, t0),
                 cluster.running.columns.earliest_planned_end(acc),
                 dict(result.statuses) if st.cfg.verify_carry else None)


def _accuracy(st: SimState) -> dict[str, float]:
    return st.accuracy.medians() if st.cfg.profile.estimate_history else {}


def carry_on(st: SimState) -> CycleResult | None:
    """The cycle at this arrival-only instant, carried on from the last one; None when the proof's
    premises do not hold (run the cycle)."""
    memo = st.carry
    if memo is None or st.fail is not None or st.cfg.cycle_interval_s > 0 or st.cfg.tenancy is not None:
        return None
    if isinstance(memo, tuple):
        memo = st.carry = _build(st, *memo)
        if memo is None:
            return None
    t, trace, cluster = st.t, memo.trace, st.cluster
    arrivals = sorted(st.arrived_now, key=order_key)
    if (not arrivals or order_key(arrivals[0]) <= memo.last_key
            or min(r.start for r in memo.reservations) <= t or memo.earliest_end <= t
            or trace.tests + len(arrivals) >= trace.max_tests or cluster.running.columns.any_evicting()):
        return None
    for s in trace.starts:
        if np.any((memo.since + memo.planned <= s) & (s < t + memo.planned)):
            return None  # a candidate's mode moved
    if not _capacity_same(memo, cluster.table):
        return None
    acc = _accuracy(st)
    ctx = CycleContext(now=t, profile=st.cfg.profile, rng=np.random.default_rng(st.cfg.seed + st.cycle_seq),
                       estimate_accuracy=acc, previous_reservations=memo.reservations)
    plan = Plan(cluster.table)
    started, verdicts = continue_scan(trace, arrivals, plan, ctx)
    result = CycleResult(bindings=plan.commit(), started=tuple(started), statuses=verdicts,
                         reservations=memo.reservations, admission=st.admission)
    if st.cfg.verify_carry:
        verify(st, memo, result)
    waiting = [j for j in arrivals if j.id not in set(started)]
    if waiting:
        memo.last_key = max(memo.last_key, order_key(waiting[-1]))
        memo.planned = np.concatenate([memo.planned, [ctx.planned_run(j) for j in waiting]])
        memo.since = np.concatenate([memo.since, np.full(len(waiting), t)])
    for jid in started:
        memo.earliest_end = min(memo.earliest_end, t + ctx.planned_run(cluster.pending[jid]))
    if memo.statuses is not None:
        memo.statuses.update(verdicts)
    return result


def _capacity_same(memo: Carry, table: NodeTable) -> bool:
    """Premise 6: on the nodes whose free capacity changed since the scan began, no reservation
    holds a node, and the head and every failed search fit as many pods as they did."""
    trace = memo.trace
    g0, c0, m0 = trace.view0
    delta = np.flatnonzero((g0 != table.gpu_free) | (c0 != table.cpu_free) | (m0 != table.mem_free))
    if delta.size == 0:
        return True
    if memo.held[delta].any():
        return False
    before = _rows(table, delta).with_free(g0[delta], c0[delta], m0[delta])
    now = _rows(table, delta)
    views: dict[int, tuple[NodeTable, NodeTable]] = {}

    def pair(mode: int) -> tuple[NodeTable, NodeTable]:
        if mode not in views:
            lim0 = [[a[delta] for a in lim] for lim in trace.limits_initial]
            lim1 = [[a[delta] for a in lim] for lim in trace.limits]
            views[mode] = (limited_view(before, lim0, mode), limited_view(now, lim1, mode))
        return views[mode]

    if not _same_fit(memo.head, *pair(0)):
        return False
    for f in trace.failures:
        if f.status.code is StatusCode.UNRESOLVABLE:
            continue  # against the empty fleet: no capacity changes it
        if not _same_fit(f.job, *pair(f.mode)):
            return False
        if f.planned is not None and not _same_fit(f.job, *pair(0)):
            return False
    return True


def _rows(table: NodeTable, idx: np.ndarray) -> NodeTable:
    """The table of these nodes alone (whole-GPU questions only: no per-GPU state, no index)."""
    return NodeTable(
        tuple(table.names[i] for i in idx.tolist()), table.gpu_models, table.model_idx[idx],
        table.leaf_idx[idx], table.spine_idx[idx], table.domain_idx[idx], table.gpu_total[idx],
        table.cpu_total[idx], table.mem_total[idx], table.gpu_free[idx], table.cpu_free[idx],
        table.mem_free[idx], table.schedulable[idx], None, None, table.pods_per_node, table.eligible)


def _same_fit(job: Job, before: NodeTable, now: NodeTable) -> bool:
    """Do the job's pods fit as many times on these nodes now as before (whole GPUs, one pod set,
    no node filter: the numbers an UNSCHEDULABLE reason is made of)?"""
    if len(job.pod_sets) != 1 or job.eligible_nodes is not None:
        return False
    ps = job.pod_sets[0]
    req = ps.request
    if req.is_fractional or req.gpus <= 0:
        return False
    if not _same_count(before, now, req, ps.replicas):
        return False
    if req.cpus > 0 or req.memory_gb > 0:
        return _same_count(before, now, PodRequest(req.gpus, 0.0, 0.0, req.gpu_models), ps.replicas)
    return True


def _same_count(before: NodeTable, now: NodeTable, req: PodRequest, replicas: int) -> bool:
    def count(table: NodeTable) -> int:
        return int(np.minimum(table.slots(req), replicas).sum())
    return count(before) == count(now)


def verify(st: SimState, memo: Carry, carried: CycleResult) -> None:
    """Run the full cycle too and check that it decides what the carried-on one did: the same
    starts, bindings and reservations, the new jobs' verdicts, and every old job's verdict of the
    same logged shape as C0's."""
    from gpufleet.sim.step import cycle_input  # the driver's own input (no import cycle at load)

    full = run_cycle(cycle_input(st, st.cluster.pending_view()))
    assert full.started == carried.started, (st.t, full.started, carried.started)
    assert full.bindings == carried.bindings, st.t
    assert full.reservations == carried.reservations, st.t
    for jid, status in carried.statuses.items():
        assert full.statuses[jid] == status, (st.t, jid, full.statuses[jid], status)
    old = memo.statuses or {}
    for jid, status in full.statuses.items():
        if jid in old:
            assert _shape(status) == _shape(old[jid]), (st.t, jid, status, old[jid])
        elif jid not in carried.statuses:
            assert False, (st.t, jid, "judged by the full cycle only", status)  # noqa: B011

