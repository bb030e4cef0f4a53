"""The failure model's handler table, and what a stopped gang's restart books.

Joins the handlers of failure_events.py (failures, health steps, rigid stops) with those of
the modules built on them: spot reclaims (spot.py), elastic shrink and grow (elastic.py,
which hands rigid jobs on to ``failure_events.on_stop`` and ``handlers.on_finish``) and driver
upgrades (fleet_events/upgrade.py).
"""

from __future__ import annotations

from gpufleet.sim.fleet_events.elastic import on_elastic_finish, on_elastic_stop
from gpufleet.sim.fleet_events.elastic import restarted as elastic_restarted
from gpufleet.sim.fleet_events.failure_events import on_failure, on_health
from gpufleet.sim.fleet_events.failures import FailureState
from gpufleet.sim.fleet_events.spot import on_reclaim
from gpufleet.sim.fleet_events.upgrade import on_upgrade
from gpufleet.sim.kernel import EventKind, Handler

#: STOP and FINISH go through fleet_events/elastic.py, which hands rigid jobs to ``on_stop`` and on_finish.
FAILURE_HANDLERS: dict[EventKind, Handler] = {
    EventKind.FAILURE: on_failure, EventKind.STOP: on_elastic_stop, EventKind.HEALTH: on_health,
    EventKind.RECLAIM: on_reclaim, EventKind.FINISH: on_elastic_finish, EventKind.UPGRADE: on_upgrade}


def restarted(st, jid: str) -> None:  # noqa: ANN001
    """A stopped gang runs again: its recovery time ends when its checkpoint is loaded."""
    fs: FailureState | None = st.fail
    if fs is None or jid not in fs.stopped:
        return
    t_fail, cause = fs.stopped.pop(jid)
    if jid in fs.elastic:
        elastic_restarted(st, jid)
    job = st.cluster.running[jid].job
    load = job.checkpointing.restart_s if job.checkpointing else 0.0
    fs.ledger.recoveries_s.append(st.t - t_fail + load)
    # the wait for a replacement and a cycle after teardown, then the checkpoint load
    rc = fs.cfg.recovery
    waited = max(0.0, st.t - t_fail - (0.0 if cause in ("spot", "upgrade") else rc.detect_s + rc.teardown_s))
    fs.ledger.charge(cause, job.total_gpus * (waited + load))
