"""After each instant: schedule or run an engine cycle, apply its decisions, sample the fleet.

The driver owns time and effects; the engine only decides. Cycles run after every instant at which
something changed (an arrival, a finish, an eviction), or on a fixed cadence when
``cycle_interval_s`` > 0, as a live scheduler would.

Every cycle goes through the engine's incremental interface (engine/incremental.py) alone: the
driver tells it what changed (``delta_of``) and keeps the memo it returns; the engine decides
whether to answer from the memo, cut the input or carry the last scan on. An instant with news and
no cycle has an empty queue; its changes reach the next cycle as the delta's ``gap``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gpufleet.engine.checkpoints import remaining_run_s
from gpufleet.engine.incremental import CARRIED, CycleDelta, run_incremental
from gpufleet.engine.phases.order import order_key
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleResult
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.mig import MIG_RECONFIGURE_S
from gpufleet.policies.filters import for_job
from gpufleet.sim.fleet_events.elastic import grow, is_delta
from gpufleet.sim.fleet_events.failure_handlers import restarted
from gpufleet.sim.fleet_events.failures import run_wall_s
from gpufleet.sim.fleet_events.upgrade_compat import restrict
from gpufleet.sim.kernel import EventKind, Outcome
from gpufleet.sim.state import SimState, cycle_input


def stranded_gpus(table: NodeTable, pending: Sequence[Job]) -> int:
    """Free GPUs on nodes where no pending pod fits (wrong shape, model, or CPU/memory exhausted,
    or no pending job may use the node: ``Job.eligible_nodes``).

    With nothing pending, free GPUs are idle, not stranded: 0.
    """
    if not pending:
        return 0
    usable = np.zeros(len(table), bool)
    seen: set[tuple] = set()
    for job in pending:
        for ps in job.pod_sets:
            key = (ps.request.shape, job.eligible_nodes)  # a pod counts only nodes it may use
            if key in seen:
                continue
            seen.add(key)
            usable |= for_job(table, job).slots(ps.request) > 0
    return int(table.gpu_free[~usable].sum())


_DUE, _CHANGED = int(Outcome.CYCLE_DUE), int(Outcome.CHANGED)


def after_instant(st: SimState, outcome: Outcome) -> None:
    cfg = st.cfg
    changed = bool(outcome & (Outcome.CHANGED | Outcome.ARRIVED))
    if changed and cfg.cycle_interval_s > 0 and not st.cycle_pending:
        st.q.push(math.ceil(st.t / cfg.cycle_interval_s) * cfg.cycle_interval_s, EventKind.CYCLE)
        st.cycle_pending = True
    due = bool(outcome & Outcome.CYCLE_DUE) or (changed and cfg.cycle_interval_s <= 0)
    if due and st.cluster.pending:
        if st.fail is not None and st.fail.upgrade is not None:
            restrict(st)  # images go only to nodes whose driver runs them (fleet_events/upgrade_compat.py)
        engine_cycle(st, delta_of(st, outcome))
    elif outcome & (Outcome.CHANGED | Outcome.CYCLE_DUE):
        st.gap = True  # the fleet moved with no cycle: the next cycle's delta says so
    st.arrived_now.clear()
    st.finished_now.clear()
    sample(st)


def delta_of(st: SimState, outcome: Outcome) -> CycleDelta:
    """What changed at this instant, as far as the outcome tells: the arrivals and the runs that
    ended, and "other" for a cycle due by the clock, a change at an instant with no finish (an
    eviction, a node event), or pods held by partially placed gangs (no rule covers them). A change
    at an earlier instant with no cycle, and the failure model's effects, are the delta's gap."""
    news = int(outcome)  # IntFlag's own operators cost a Python call each, at every instant
    other = (bool(news & _DUE) or bool(st.cluster.partial) or (bool(news & _CHANGED) and not st.finished_now))
    return CycleDelta(arrived=tuple(st.arrived_now), ended=tuple(st.finished_now), other=other,
                      gap=st.gap or st.fail is not None)


def engine_cycle(st: SimState, delta: CycleDelta) -> None:
    """Ask the engine what to do now, then do it."""
    st.cycle_seq += 1
    result, st.memo = run_incremental(st.memo, delta, cycle_input(st, st.cluster.pending_view()),
                                      verify=st.cfg.verify_carry)
    st.gap = False
    if result.stats.reused == CARRIED:
        st.carried_cycles += 1
    elif result.stats.reused:
        st.skipped_cycles += 1
    else:
        st.cycles += 1
    apply_result(st, result)


def apply_result(st: SimState, result: CycleResult) -> None:
    """Do what a cycle decided: keep its reservations and admission state, log why jobs wait,
    send eviction notices, bind and start."""
    cluster, t = st.cluster, st.t
    st.reservations = result.reservations
    st.admission = result.admission  # quota reservations, sticky heads (engine/types.py)
    if st.decisions is not None:
        if result.left_out:
            st.decisions.record_cut(st.rec, t, result, cluster.table.names, st.submit_times,
                                    cluster.pending_view(), lambda jid, s: board_position(st, jid, s))
        else:
            st.decisions.record(st.rec, t, result, cluster.table.names, st.submit_times)
            if not result.stats.reused:  # a reused answer logs the arrivals only
                st.decisions.unsettle()
    schedule_wakeups(st)
    for res in st.reservations:
        if res.protected:
            st.reserved_starts.setdefault(res.job, res.start)
    send_eviction_notices(st, result)
    started_now = set(result.started)
    for res in result.reservations:  # the schedule's start estimates (Status.estimated_start)
        if res.job not in started_now:
            st.estimates.setdefault(res.job, res.start)
    bind_and_start(st, result)


def board_position(st: SimState, jid: JobId, status: Status) -> tuple:
    """Where the full cycle's status board lists a waiting job: jobs the placer judged in queue
    order, then the jobs past a strict-FIFO stop (the cycle's WAIT default) in input order."""
    if status.code is StatusCode.WAIT:
        return (1, st.cluster.pending_view().positions[jid])
    return (0, order_key(st.cluster.pending[jid]))


def schedule_wakeups(st: SimState) -> None:
    """Cycles that must run even if nothing else happens then."""
    t = st.t
    wake = min((r.start for r in st.reservations if r.start > t), default=None)
    if wake is not None and wake not in st.wakeups:
        # Nothing else may happen at a reservation's time (it can fall where another
        # reservation ends): make sure a cycle runs then.
        st.wakeups.add(wake)
        st.q.push(wake, EventKind.CYCLE)
    period = st.cfg.profile.period_s
    if period > 0 and st.cluster.running and t + period not in st.wakeups:
        # A periodic preemptor (defrag) looks again after its period even if nothing
        # changes; bounded: only while jobs run (each of which ends).
        st.wakeups.add(t + period)
        st.q.push(t + period, EventKind.CYCLE)


def send_eviction_notices(st: SimState, result: CycleResult) -> None:
    cluster, t = st.cluster, st.t
    for p in result.preemptions:
        if p.reserved and p.job in cluster.pending:
            # A waiting job's quota reservation taken back (Kueue evicts admitted workloads whose
            # pods have not started): nothing to stop, no work lost; look again at once.
            st.preemptions += 1
            st.rec.event(t, "preempt", p.job, f"for {p.for_job}: {p.reason}; quota reservation released")
            st.q.push(t, EventKind.CYCLE)
            continue
        if p.job in cluster.running and not cluster.running[p.job].evicting:
            cluster.mark_evicting(p.job, t + p.grace_s)
            st.q.push(t + p.grace_s, EventKind.EVICT, (p.job, st.gen(p.job), t, p.grace_s))
            st.rec.event(t, "preempt-notice", p.job, f"for {p.for_job}: {p.reason}")
            st.disruptions.append((t, cluster.running[p.job].job.total_gpu_equivalents))
            st.frag.moved(t, cluster.running[p.job].job, p.for_job)


def bind_and_start(st: SimState, result: CycleResult) -> None:
    """Bind the pods the engine placed; start the jobs whose gangs are complete."""
    cfg, cluster, t = st.cfg, st.cluster, st.t
    for b in result.bindings:
        cluster.bind(b)
        if not cfg.profile.gang:
            st.rec.event(t, "bind", b.job, f"{b.pod_set}/{b.replica}@{cluster.table.names[b.node]}")
    deltas = [jid for jid in result.started if is_delta(st, jid)]
    if deltas:  # an elastic job's grow-back, placed as a gang delta (fleet_events/elastic.py)
        grow(st, deltas)
    for jid in result.started:
        if deltas and jid in deltas:
            continue
        rj = cluster.start(jid, t)
        st.starts.setdefault(jid, t)
        if st.decisions is not None:
            st.decisions.started(jid)
        nodes = sorted({cluster.table.names[b.node] for b in rj.bindings})
        st.rec.event(t, "start", jid, ",".join(nodes))
        if st.fail is not None:
            restarted(st, jid)
            duration = run_wall_s(rj)  # checkpoints cost δ per τ of work when failures are on
        else:
            duration = remaining_run_s(rj)
        if any(b.slot is not None and b.slot.reconfigure for b in rj.bindings):
            duration += MIG_RECONFIGURE_S  # the GPU's MIG layout changes before it runs
        if cfg.runtime_model is not None:
            factor = cfg.runtime_model(rj.job, [b.node for b in rj.bindings], cluster.table)
            st.slowdowns[jid] = factor
            duration *= factor
        st.q.push(t + duration, EventKind.FINISH, (jid, st.gen(jid)))


def sample(st: SimState) -> None:
    """The fleet timeline: allocation every instant, stranded capacity every few minutes."""
    cluster, t = st.cluster, st.t
    allocated = cluster.table.gpus_allocated   # busy_gpus is this less the partial gangs' GPUs
    st.rec.sample(t, allocated, allocated - cluster.held_by_partial_gangs, len(cluster.pending))
    if t >= st.next_stranded:
        # one job per shape class: the pod shapes are what counts (stranded_gpus dedups them)
        reps = [cluster.pending[jid] for jid in cluster.pending_view().shapes.first_ids()]
        st.rec.sample_stranded(t, stranded_gpus(cluster.table, reps))
        st.frag.sample(t, cluster.table)
        st.next_stranded = t + st.cfg.stranded_every_s
    if st.cfg.progress is not None:
        st.cfg.progress(t)
