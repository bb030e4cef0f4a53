"""One handler per event kind: each reads as what happens at that instant.

A handler changes the state and returns an ``Outcome``: CHANGED when the cluster changed (a cycle
should look again), CYCLE_DUE when a scheduled cycle's time has come.
"""

from __future__ import annotations

from gpufleet.engine.checkpoints import eviction_cost
from gpufleet.sim.kernel import Event, EventKind, Handler, Outcome
from gpufleet.sim.state import SimState


def on_arrival(st: SimState, ev: Event) -> Outcome:
    """A job is submitted: it joins the queue."""
    st.cluster.submit(ev.payload)
    st.rec.event(st.t, "submit", ev.payload.id)
    st.arrived_now.append(ev.payload)
    return Outcome.ARRIVED


def charge_usage(st: SimState, jid: str) -> None:
    """Fair share's ledger: the GPU-seconds a run held, charged when it ends however it ends."""
    if st.cfg.usage_tracker is not None:
        rj = st.cluster.running[jid]
        st.cfg.usage_tracker.add_job(rj.job, rj.job.total_gpus * (st.t - rj.start_time), st.t)


def on_finish(st: SimState, ev: Event) -> Outcome:
    """A run completes: its GPUs return to the free pool."""
    jid, gen = ev.payload
    if not st.is_current(jid, gen) or (st.fail is not None and jid in st.fail.stopped):
        return Outcome.NOTHING  # the run this event was for was evicted, or failed before its end
    charge_usage(st, jid)
    rj = st.cluster.finish(jid)
    st.finished_now.append(rj)
    st.finishes[jid] = st.t
    st.accuracy.finished(rj.job)
    st.rec.event(st.t, "finish", jid)
    return Outcome.CHANGED


def on_evict(st: SimState, ev: Event) -> Outcome:
    """A preemption's grace period ends: the gang goes, keeping what it checkpointed, and requeues."""
    jid, gen, notice, grace = ev.payload
    if not st.is_current(jid, gen):
        return Outcome.NOTHING
    rj = st.cluster.running[jid]
    cost = eviction_cost(rj, notice, grace)
    charge_usage(st, jid)
    st.cluster.evict(jid, cost.saved_s)
    st.generation[jid] = st.gen(jid) + 1
    st.preemptions += 1
    st.lost_gpu_s += cost.lost_gpu_s
    st.frag.evicted(rj.job, cost.lost_s, cost.restart_s)
    st.rec.event(st.t, "preempt", jid, f"lost {cost.lost_s:.0f}s of work; saved {cost.saved_s:.0f}s")
    return Outcome.CHANGED


def on_cycle(st: SimState, ev: Event) -> Outcome:
    """A scheduled cycle's time has come (cadence, a reservation's start, a periodic preemptor)."""
    st.cycle_pending = False
    return Outcome.CYCLE_DUE


#: The scheduling simulator's handlers; fleet_events/failures.py adds its own kinds to a copy.
HANDLERS: dict[EventKind, Handler] = {
    EventKind.ARRIVAL: on_arrival,
    EventKind.FINISH: on_finish,
    EventKind.EVICT: on_evict,
    EventKind.CYCLE: on_cycle,
}
