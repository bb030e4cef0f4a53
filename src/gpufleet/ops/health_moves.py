"""A diagnosis verdict moves a node along the node-health state machine (model/health.py).

``node diagnose`` names a layer and an action; the state machine says which steps a node may take.
This module is the one place that joins the two, so that a verdict can never move a node in an
order the runbook (``model.health.TRANSITIONS``) does not allow.

The walk, from the node's current state:

* a fault (any layer but ``none``) on a node in service (``healthy`` or ``preflight``) is detected:
  FAULT → suspect. A condition to watch with no repair action (thermal slowdown) stops there:
  the node takes no new work until someone looks.
* every repair action needs the node out of service: its jobs are stopped and drained (STOPPED,
  DRAINED → quarantined) and diagnosis starts (DIAGNOSE → diagnosing). The diagnosis *is* this
  verdict, so it also decides how diagnosing ends: ``drain_and_rma`` → REPLACE → rma (parts go back
  to the vendor), every other action → FIXED → repaired (reset, reboot, driver, fabric manager,
  cable, runtime config or device plugin fixed in place).
* the repaired node still has to pass pre-flight (RETURNED → preflight, then ``gpufleet preflight
  run`` passing → PASSED → healthy): a verdict never returns a node to service by itself.
* ``remove_taint`` is Kubernetes state only: the node's GPUs are fine, nothing moves.
* no fault on a node being diagnosed means diagnosis found nothing to fix: FIXED → repaired, and the
  node goes back through pre-flight like any other.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.model.health import HealthEvent, HealthState, next_state

E, S = HealthEvent, HealthState

#: Actions that do not take the node out of service.
NO_REPAIR = frozenset({"none", "remove_taint"})


@dataclass(frozen=True, slots=True)
class Move:
    event: HealthEvent
    to: HealthState


def verdict_moves(state: HealthState, layer: str, action: str) -> list[Move]:
    """The transitions a verdict (layer, action) makes from ``state``, in order (module docstring).

    Every step goes through ``next_state``, so an edge the machine lacks raises IllegalTransition
    instead of producing a path the runbook forbids.
    """
    path: list[Move] = []

    def step(event: HealthEvent) -> None:
        nonlocal state
        state = next_state(state, event)
        path.append(Move(event, state))

    fault = layer != "none"
    if not fault:
        if state is S.DIAGNOSING:
            step(E.FIXED)
        return path
    if action == "remove_taint":
        return path
    if state in (S.HEALTHY, S.PREFLIGHT):
        step(E.FAULT)
    if action in NO_REPAIR:
        return path
    if state is S.SUSPECT:
        step(E.STOPPED)
    if state is S.DRAINING:
        step(E.DRAINED)
    if state is S.QUARANTINED:
        step(E.DIAGNOSE)
    if state is S.DIAGNOSING:
        step(E.REPLACE if action == "drain_and_rma" else E.FIXED)
    return path
