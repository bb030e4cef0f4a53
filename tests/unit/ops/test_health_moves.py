"""A diagnosis verdict moves a node along the health state machine, never around it."""

import pytest

from gpufleet.model.health import TRANSITIONS, HealthEvent, HealthState, IllegalTransition
from gpufleet.ops.health_moves import verdict_moves
from gpufleet.ops.verdict import ACTION_WHY

S, E = HealthState, HealthEvent


def path(state, layer, action):
    return [(m.event, m.to) for m in verdict_moves(state, layer, action)]


def test_a_gpu_that_needs_replacing_goes_from_service_to_rma_through_drain_and_diagnosis():
    assert path(S.HEALTHY, "hardware_pci", "drain_and_rma") == [
        (E.FAULT, S.SUSPECT), (E.STOPPED, S.DRAINING), (E.DRAINED, S.QUARANTINED),
        (E.DIAGNOSE, S.DIAGNOSING), (E.REPLACE, S.RMA)]


def test_a_fix_in_place_ends_repaired_and_never_returns_the_node_to_service_without_preflight():
    moves = path(S.HEALTHY, "nvlink_fabric", "restart_fabricmanager")
    assert moves[-1] == (E.FIXED, S.REPAIRED)
    assert all(to is not S.HEALTHY for _, to in moves)


def test_a_thermal_observation_only_stops_new_work():
    assert path(S.HEALTHY, "thermal_power", "none") == [(E.FAULT, S.SUSPECT)]


def test_a_taint_is_kubernetes_state_and_moves_nothing():
    assert path(S.HEALTHY, "kubernetes", "remove_taint") == []


def test_a_healthy_verdict_on_a_node_in_diagnosis_ends_its_diagnosis_as_nothing_to_fix():
    assert path(S.DIAGNOSING, "none", "none") == [(E.FIXED, S.REPAIRED)]
    assert path(S.HEALTHY, "none", "none") == []


def test_a_fault_found_during_preflight_sends_the_node_back_through_diagnosis():
    moves = path(S.PREFLIGHT, "gpu_xid", "reset_gpu")
    assert moves[0] == (E.FAULT, S.SUSPECT)
    assert moves[-1] == (E.FIXED, S.REPAIRED)


@pytest.mark.parametrize("action", sorted(ACTION_WHY))
@pytest.mark.parametrize("state", list(HealthState))
def test_every_verdict_from_every_state_uses_only_edges_of_the_machine(state, action):
    """Each move is an edge of TRANSITIONS from the state before it, or the walk refuses
    (IllegalTransition) — e.g. a fault reported for a node already away at the vendor."""
    try:
        moves = verdict_moves(state, "gpu_xid", action)
    except IllegalTransition:
        return
    here = state
    for m in moves:
        assert TRANSITIONS[(here, m.event)] is m.to
        here = m.to


def test_a_verdict_speaks_the_machine_and_the_fleet_label_of_where_it_ends():
    """One vocabulary: the events are the machine's, the label is fleet_label of the end state."""
    from gpufleet.ops.verdict import health_verdict

    v = health_verdict("hardware_pci", "drain_and_rma")
    assert v.events == ("fault", "stopped", "drained", "diagnose", "replace")
    assert (v.state, v.fleet_label) == ("rma", "down")
    thermal = health_verdict("thermal_power", "none")
    assert (thermal.events, thermal.state, thermal.fleet_label) == (("fault",), "suspect", "draining")
    assert health_verdict("kubernetes", "remove_taint").fleet_label == "healthy"
