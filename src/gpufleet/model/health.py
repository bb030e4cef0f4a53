"""The node-health state machine: where a node is between a fault and its return to service.

    healthy → suspect → draining → quarantined → diagnosing → repaired → preflight → healthy
                                                      └──────→ rma ──────→ preflight
    preflight → quarantined            (the gate failed: back for diagnosis)
    healthy / preflight → suspect      (a fault found in service, or while gating)

The transitions are an explicit table (``TRANSITIONS``): (state, event) → next state. Anything not
in the table is an error, so a driver cannot move a node in an order the runbook does not allow.
Only ``healthy`` nodes take work (``schedulable``); the simulator feeds that into the engine's
``NodeTable.schedulable`` column and ops (issue 12) drives the same machine from live signals.

Each step has a duration (``StepDurations``); the figures and their sources are in
docs/reliability.md (detection: NCCL 10-min timeout vs DCGM 30 s health watch; diagnostics: DCGM
``diag -r 3`` ≈ 15 min; pre-flight: ``diag -r 2`` ≈ 2 min; repair turnaround is the least certain).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class HealthState(StrEnum):
    HEALTHY = "healthy"
    SUSPECT = "suspect"          # a fault was seen; no new work; running jobs are being stopped
    DRAINING = "draining"        # waiting for the node's jobs to leave
    QUARANTINED = "quarantined"  # empty, out of service, waiting for diagnosis
    DIAGNOSING = "diagnosing"    # diagnostics running (DCGM diag, NCCL tests)
    REPAIRED = "repaired"        # fixed in place (reboot, reseat, firmware)
    RMA = "rma"                  # parts returned to the vendor; away for weeks
    PREFLIGHT = "preflight"      # the admission gate runs before the node takes work again

    @property
    def schedulable(self) -> bool:
        return self is HealthState.HEALTHY


class HealthEvent(StrEnum):
    FAULT = "fault"              # an error was detected on the node (Xid, health watch, heartbeat)
    STOPPED = "stopped"          # the node's jobs were stopped (detection complete)
    DRAINED = "drained"          # no job left on the node
    DIAGNOSE = "diagnose"        # diagnostics start
    FIXED = "fixed"              # diagnosis found a fault fixable in place, and it was fixed
    REPLACE = "replace"          # diagnosis found parts to return (RMA)
    RETURNED = "returned"        # back from repair (in place, or the RMA came back)
    PASSED = "passed"            # the pre-flight gate passed
    GATE_FAILED = "gate_failed"  # the pre-flight gate failed


S, E = HealthState, HealthEvent

#: The whole machine: (state, event) → next state.
TRANSITIONS: dict[tuple[HealthState, HealthEvent], HealthState] = {
    (S.HEALTHY, E.FAULT): S.SUSPECT,
    (S.SUSPECT, E.STOPPED): S.DRAINING,
    (S.DRAINING, E.DRAINED): S.QUARANTINED,
    (S.QUARANTINED, E.DIAGNOSE): S.DIAGNOSING,
    (S.DIAGNOSING, E.FIXED): S.REPAIRED,
    (S.DIAGNOSING, E.REPLACE): S.RMA,
    (S.REPAIRED, E.RETURNED): S.PREFLIGHT,
    (S.RMA, E.RETURNED): S.PREFLIGHT,
    (S.PREFLIGHT, E.PASSED): S.HEALTHY,
    (S.PREFLIGHT, E.GATE_FAILED): S.QUARANTINED,
    (S.PREFLIGHT, E.FAULT): S.SUSPECT,
}


class IllegalTransition(ValueError):
    pass


def next_state(state: HealthState, event: HealthEvent) -> HealthState:
    """The state after ``event``; IllegalTransition when the table has no such edge."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalTransition(f"node health: no transition from {state} on {event}") from None


@dataclass(frozen=True, slots=True)
class StepDurations:
    """Seconds a node spends in each step (the time before the event that ends it).

    Defaults: detection 30 s (DCGM health watch interval; 600 s for a hang caught by the NCCL
    timeout), drain 60 s, quarantine 0 s, diagnosis 900 s (``dcgmi diag -r 3`` ≈ 15 min), repair
    in place 4 h and RMA 14 d (assumptions: no primary source, see docs/reliability.md), pre-flight
    120 s (``dcgmi diag -r 2`` ≈ 2 min).
    """

    detect_s: float = 30.0
    drain_s: float = 60.0
    quarantine_s: float = 0.0
    diagnose_s: float = 900.0
    repair_s: float = 4 * 3600.0
    rma_s: float = 14 * 86400.0
    preflight_s: float = 120.0

    def leaving(self, state: HealthState) -> tuple[HealthEvent, float] | None:
        """The event that ends ``state`` on the normal path and how long after entry; None for
        ``healthy`` (it leaves only on a fault) and ``diagnosing`` (its outcome is a choice)."""
        return {
            S.SUSPECT: (E.STOPPED, self.detect_s),
            S.DRAINING: (E.DRAINED, self.drain_s),
            S.QUARANTINED: (E.DIAGNOSE, self.quarantine_s),
            S.REPAIRED: (E.RETURNED, self.repair_s),
            S.RMA: (E.RETURNED, self.rma_s),
            S.PREFLIGHT: (E.PASSED, self.preflight_s),
        }.get(state)

    def out_of_service_s(self, rma: bool = False) -> float:
        """Fault to healthy on the normal path: detect + drain + quarantine + diagnose + (repair or
        RMA) + pre-flight. Defaults, repaired in place: 30+60+0+900+14400+120 = 15,510 s."""
        return (self.detect_s + self.drain_s + self.quarantine_s + self.diagnose_s
                + (self.rma_s if rma else self.repair_s) + self.preflight_s)


@dataclass
class NodeHealthBook:
    """The health state of every node of a fleet and the history of its moves.

    ``moves`` holds (time, node, from, to) for every transition: what ops shows and tests check.
    """

    states: list[HealthState]
    moves: list[tuple[float, int, HealthState, HealthState]] = field(default_factory=list)

    @classmethod
    def all_healthy(cls, nodes: int) -> NodeHealthBook:
        return cls([HealthState.HEALTHY] * nodes)

    def apply(self, node: int, event: HealthEvent, t: float) -> HealthState:
        old = self.states[node]
        new = next_state(old, event)
        self.states[node] = new
        self.moves.append((t, node, old, new))
        return new

    def count(self, state: HealthState) -> int:
        return sum(1 for s in self.states if s is state)
