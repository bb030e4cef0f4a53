"""The node-health state machine: where a node is between a fault and its return to service.

    healthy → suspect → draining → quarantined → diagnosing → repaired → preflight → healthy
                                                      └──────→ rma ──────→ preflight
    preflight → quarantined            (the gate failed: back for diagnosis)
    healthy / preflight → suspect      (a fault found in service, or while gating)

The transitions are an explicit table (``TRANSITIONS``): (state, event) → next state. Anything not
in the table is an error, so a driver cannot move a node in an order the runbook does not allow.
Only ``healthy`` nodes take work (``schedulable``); the simulator feeds that into the engine's
``NodeTable.schedulable`` column and ops (issue 12) drives the same machine from live signals.

One vocabulary, two grains. ``HealthState`` is the machine; ``model.fleet.NodeHealth`` (healthy,
degraded, draining, down) is the coarse *label* a fleet config, the Slurm/Kubernetes adapters and the
engine's ``schedulable`` column speak. The label is derived from the state (``fleet_label``), never
kept beside it, and a node a config labels enters the machine at ``machine_state(label)``:

    state        label      why
    healthy      healthy    in service
    suspect      draining   no new work; its jobs are being stopped (Slurm's DRAIN)
    draining     draining   waiting for its jobs to leave
    quarantined  down       out of service: diagnosis, repair, RMA and the gate all
    diagnosing   down         happen with no work on the node
    repaired     down
    rma          down
    preflight    down       the gate runs before the node takes work again

    label        enters as
    healthy      healthy
    degraded     healthy    in service and schedulable, with a condition to watch (Slurm's
                            degraded feature, a thermal note): the machine has no separate state
                            for it, it is healthy with a flag
    draining     draining
    down         quarantined  out of service, waiting for diagnosis

Both directions keep schedulability: ``fleet_label(s).schedulable == s.schedulable`` and
``machine_state(l).schedulable == l.schedulable`` (tests/unit/model/test_health.py checks every
state and label).

Each step has a duration (``StepDurations``); the figures and their sources are in
docs/reliability.md (detection: NCCL 10-min timeout vs DCGM 30 s health watch; diagnostics: DCGM
``diag -r 3`` ≈ 15 min; pre-flight: ``diag -r 2`` ≈ 2 min; repair turnaround is the least certain).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from gpufleet.model.fleet import NodeHealth


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


#: The fleet label each machine state shows as (module docstring).
FLEET_LABEL: dict[HealthState, NodeHealth] = {
    S.HEALTHY: NodeHealth.HEALTHY,
    S.SUSPECT: NodeHealth.DRAINING,
    S.DRAINING: NodeHealth.DRAINING,
    S.QUARANTINED: NodeHealth.DOWN,
    S.DIAGNOSING: NodeHealth.DOWN,
    S.REPAIRED: NodeHealth.DOWN,
    S.RMA: NodeHealth.DOWN,
    S.PREFLIGHT: NodeHealth.DOWN,
}

#: Where a node carrying a fleet label enters the machine (module docstring).
ENTRY_STATE: dict[NodeHealth, HealthState] = {
    NodeHealth.HEALTHY: S.HEALTHY,
    NodeHealth.DEGRADED: S.HEALTHY,
    NodeHealth.DRAINING: S.DRAINING,
    NodeHealth.DOWN: S.QUARANTINED,
}


def fleet_label(state: HealthState) -> NodeHealth:
    """The coarse label (fleet config, adapters, engine) a machine state shows as."""
    return FLEET_LABEL[state]


def machine_state(label: NodeHealth | HealthState | str) -> HealthState:
    """The machine state of a node that carries ``label``: a fleet label enters at ``ENTRY_STATE``,
    a machine state name is itself ("rma", "preflight" … in a fleet config or on the command line)."""
    if isinstance(label, HealthState):
        return label
    value = str(label)
    if value in NodeHealth._value2member_map_:
        return ENTRY_STATE[NodeHealth(value)]
    return HealthState(value)


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

    @classmethod
    def from_labels(cls, labels: Iterable[NodeHealth]) -> NodeHealthBook:
        """A fleet's nodes as the config labels them, each at its entry state (a node the config
        marks down starts quarantined and stays out until the machine brings it back)."""
        return cls([machine_state(label) for label in labels])

    def labels(self) -> list[NodeHealth]:
        """Each node's fleet label now."""
        return [fleet_label(s) for s in self.states]

    def apply(self, node: int, event: HealthEvent, t: float) -> HealthState:
        old = self.states[node]
        new = next_state(old, event)
        self.states[node] = new
        self.moves.append((t, node, old, new))
        return new

    def count(self, state: HealthState) -> int:
        return sum(1 for s in self.states if s is state)
