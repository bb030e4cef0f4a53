"""The failure model's event handlers: what FAILURE, STOP, HEALTH, RECLAIM, FINISH and UPGRADE do.

One job: dispatch each failure-related event (fleet_events/failures.py holds the model — kinds, rates,
configs, the seeded stream, the ledger and the progress arithmetic; its docstring says what a
failure does step by step). ``install`` gives a run its failure stream, spare pool, spot reclaims
and rollout. The handler table (with the spot, elastic and upgrade handlers) is
fleet_events/failure_handlers.py: fleet_events/elastic.py builds on ``on_stop`` here.
"""

from __future__ import annotations

import numpy as np

from gpufleet.model.health import HealthEvent, HealthState, NodeHealthBook
from gpufleet.sim.cluster import set_schedulable
from gpufleet.sim.fleet_events.failures import (
    SPECIAL_KINDS,
    FailureConfig,
    FailureState,
    checkpoint_stretch,
    draw_failures,
    saved_s,
    work_done_s,
)
from gpufleet.sim.fleet_events.spot import install as install_spot
from gpufleet.sim.fleet_events.spot import spot_back
from gpufleet.sim.fleet_events.upgrade import install as install_upgrade
from gpufleet.sim.fleet_events.upgrade_stack import repair_pins_fabric_manager
from gpufleet.sim.kernel import Event, EventKind, Outcome


def on_failure(st, ev: Event) -> Outcome:  # noqa: ANN001 (SimState; avoids an import cycle)
    """A component fails on a node: the node leaves service; gangs on it stop computing."""
    fs: FailureState = st.fail
    node, kind_idx, u = ev.payload
    if fs.book.states[node] is not HealthState.HEALTHY:
        return Outcome.NOTHING  # already out of service: the fault is found with the first one
    kind = SPECIAL_KINDS[kind_idx] if kind_idx < 0 else fs.cfg.kinds[kind_idx]
    in_pool = node in fs.pool
    fs.ledger.node_failures += 1
    fs.book.apply(node, HealthEvent.FAULT, st.t)
    set_schedulable(st.cluster.table, node, False)
    name = st.cluster.table.names[node]
    for jid in st.cluster.unbind_on(node):  # pods of waiting per-pod jobs bound there
        st.rec.event(st.t, "unbound", jid, f"pods on {name} released: the node failed")
    st.rec.event(st.t, "node-fault", name, f"{kind.name}: {kind.rows.split(',')[0]}")
    _away(st, +1)
    rma = u < kind.rma_share
    st.q.push(st.t + fs.cfg.steps.detect_s, EventKind.HEALTH, (node, HealthEvent.STOPPED, rma))
    if in_pool:
        fs.pool.remove(node)
        return Outcome.NOTHING
    # bring in a spare for the node that left service
    if fs.pool:
        spare = fs.pool.pop(0)
        fs.ledger.spares_used += 1
        rc = fs.cfg.recovery  # the swap starts once the failure is detected and the gang torn down
        st.q.push(st.t + rc.detect_s + rc.teardown_s + rc.replace_s, EventKind.HEALTH, (spare, None, False))
    elif fs.cfg.spares > 0:
        fs.ledger.no_spare += 1
        fs.short += 1
    if fs.cfg.spares > 0:
        fs.ledger.spare_needed += 1
    for jid, rj in list(st.cluster.running.items()):
        if any(b.node == node for b in rj.bindings) and jid not in fs.stopped:
            fs.stopped[jid] = (st.t, kind.name)
            stop_at = st.t + fs.cfg.recovery.detect_s + fs.cfg.recovery.teardown_s
            st.q.push(stop_at, EventKind.STOP, (jid, st.gen(jid), st.t, kind.name))
            st.rec.event(st.t, "failed", jid, f"{kind.name} on {name}; stops at t={stop_at:.0f}")
    return Outcome.CHANGED


def on_stop(st, ev: Event) -> Outcome:  # noqa: ANN001
    """Detection and teardown are over: the gang is released and requeued from its checkpoint."""
    fs: FailureState = st.fail
    jid, gen, t_fail, cause = ev.payload
    if not st.is_current(jid, gen):
        return Outcome.NOTHING
    rj = st.cluster.running[jid]
    progress = work_done_s(rj, t_fail)
    saved = saved_s(rj, progress)
    in_notice = fs.spot_saved.pop(jid, None)
    if in_notice is not None:  # a checkpoint written during a spot notice
        saved = max(saved, min(in_notice, progress))
    held = st.t - rj.start_time
    gpus = rj.job.total_gpus
    # this failure's cost: the work since the last checkpoint (at wall speed) and the GPUs held
    # idle from the failure to the teardown; the checkpoint load is charged at the restart.
    fs.ledger.charge(cause, gpus * ((progress - saved) * checkpoint_stretch(rj) + (st.t - t_fail)))
    if st.cfg.usage_tracker is not None:
        st.cfg.usage_tracker.add_job(rj.job, gpus * held, st.t)
    st.cluster.evict(jid, saved)
    st.generation[jid] = st.gen(jid) + 1
    fs.ledger.interruptions += 1
    st.rec.event(st.t, "stopped", jid, f"{cause}: lost {progress - saved:.0f}s of work; "
                                      f"resumes from {saved:.0f}s")
    return Outcome.CHANGED


def on_health(st, ev: Event) -> Outcome:  # noqa: ANN001
    """A node finishes one health step and moves to the next (or a spare joins service)."""
    fs: FailureState = st.fail
    node, event, rma = ev.payload
    if event == "spot-back":
        return spot_back(st, node)
    if event is None:  # a spare swapped in
        if fs.book.states[node] is not HealthState.HEALTHY:
            return Outcome.NOTHING  # it failed on its way in
        _in_service(st, node)
        st.rec.event(st.t, "spare-in", st.cluster.table.names[node])
        return Outcome.CHANGED
    state = fs.book.states[node]
    if state is HealthState.DIAGNOSING:
        event = HealthEvent.REPLACE if rma else HealthEvent.FIXED
    admitted_bad = False
    if state is HealthState.PREFLIGHT and fs.cfg.bad_after_repair > 0:
        visit = fs.gate_visits.get(node, 0)
        fs.gate_visits[node] = visit + 1
        bad_u, catch_u = np.random.default_rng([fs.cfg.seed, 0xBAD, node, visit]).random(2)
        if bad_u < fs.cfg.bad_after_repair:
            if catch_u < fs.cfg.gate_catch:
                event = HealthEvent.GATE_FAILED
                fs.ledger.gate_caught += 1
                st.rec.event(st.t, "gate-failed", st.cluster.table.names[node], "bad after repair")
            else:
                admitted_bad = True
                fs.ledger.admitted_bad += 1
                fs.bad.add(node)  # it fails once it takes work (_in_service)
    new = fs.book.apply(node, event, st.t)
    if new is HealthState.HEALTHY:
        _away(st, -1)
        # a healthy node fills a service slot lost without a spare first, then the pool
        if fs.short > 0:
            fs.short -= 1
        elif node in fs.reclaimed:
            return Outcome.NOTHING  # repaired while its spot capacity is away: it returns then
        elif len(fs.pool) < fs.cfg.spares:
            fs.pool.append(node)
            st.rec.event(st.t, "node-healthy", st.cluster.table.names[node], "back to the spare pool")
            return Outcome.NOTHING
        _in_service(st, node)
        st.rec.event(st.t, "node-healthy", st.cluster.table.names[node],
                     "in service (bad: passed the gate)" if admitted_bad else "in service")
        return Outcome.CHANGED
    if new is HealthState.DIAGNOSING:
        st.q.push(st.t + fs.cfg.steps.diagnose_s, EventKind.HEALTH, (node, HealthEvent.FIXED, rma))
        return Outcome.NOTHING
    leave = fs.cfg.steps.leaving(new)
    assert leave is not None
    st.q.push(st.t + leave[1], EventKind.HEALTH, (node, leave[0], rma))
    return Outcome.NOTHING


def _in_service(st, node: int) -> None:  # noqa: ANN001
    """The node takes work again; one admitted bad fails under that load ``bad_fails_after_s`` later."""
    fs: FailureState = st.fail
    if fs.upgrade is not None and node in fs.upgrade.held:
        repair_pins_fabric_manager(fs.upgrade, node)
        st.rec.event(st.t, "fm-pinned", st.cluster.table.names[node],
                     f"repair pinned Fabric Manager to driver {fs.upgrade.driver[node]}: in service")
    set_schedulable(st.cluster.table, node, True)
    if node in fs.bad:
        fs.bad.discard(node)
        st.q.push(st.t + fs.cfg.bad_fails_after_s, EventKind.FAILURE, (node, -1, 1.0))


def _away(st, delta: int) -> None:  # noqa: ANN001
    fs: FailureState = st.fail
    fs.away += delta
    fs.ledger.away.append((st.t, fs.away))


def install(st, cfg: FailureConfig, horizon_s: float) -> None:  # noqa: ANN001
    """Give a simulation its failure stream and spare pool."""
    table = st.cluster.table
    n = len(table)
    pool = list(range(n - cfg.spares, n)) if cfg.spares else []
    # each node enters the health machine where its fleet label puts it (model/health.py): a node the
    # config marks down starts quarantined, so a later FAULT/PASSED can never bring it into service
    book = NodeHealthBook.from_labels(node.health for node in st.cluster.fleet.nodes)
    st.fail = FailureState(cfg, book, pool)
    for node in pool:
        set_schedulable(table, node, False)
    for t, node, k, u in draw_failures(cfg, table.gpu_total, horizon_s):
        st.q.push(t, EventKind.FAILURE, (node, k, u))
    for t, node in cfg.scripted:  # kind 0, u = 1: repaired in place
        st.q.push(t, EventKind.FAILURE, (node, 0, 1.0))
    if cfg.spot is not None:
        install_spot(st, horizon_s)
    if cfg.upgrade is not None:
        install_upgrade(st, cfg.upgrade)
