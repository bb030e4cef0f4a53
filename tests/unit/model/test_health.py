"""The node-health state machine: the runbook's order, and nothing else."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.model.health import (
    TRANSITIONS,
    HealthEvent,
    HealthState,
    IllegalTransition,
    NodeHealthBook,
    StepDurations,
    next_state,
)

E, S = HealthEvent, HealthState


def test_a_node_repaired_in_place_walks_the_whole_runbook_back_to_healthy():
    book = NodeHealthBook.all_healthy(1)
    path = [E.FAULT, E.STOPPED, E.DRAINED, E.DIAGNOSE, E.FIXED, E.RETURNED, E.PASSED]
    for i, ev in enumerate(path):
        book.apply(0, ev, float(i))
    assert [m[3] for m in book.moves] == [S.SUSPECT, S.DRAINING, S.QUARANTINED, S.DIAGNOSING,
                                          S.REPAIRED, S.PREFLIGHT, S.HEALTHY]


def test_an_rma_node_comes_back_through_the_preflight_gate():
    assert next_state(S.DIAGNOSING, E.REPLACE) is S.RMA
    assert next_state(S.RMA, E.RETURNED) is S.PREFLIGHT
    assert next_state(S.PREFLIGHT, E.GATE_FAILED) is S.QUARANTINED


def test_a_suspect_node_cannot_skip_draining_and_diagnosis():
    with pytest.raises(IllegalTransition):
        next_state(S.SUSPECT, E.PASSED)
    with pytest.raises(IllegalTransition):
        next_state(S.QUARANTINED, E.PASSED)


def test_only_healthy_nodes_take_work():
    assert [s for s in S if s.schedulable] == [S.HEALTHY]


@given(st.lists(st.sampled_from(list(E)), max_size=40))
def test_any_event_sequence_either_follows_the_table_or_is_refused(events):
    book = NodeHealthBook.all_healthy(1)
    for i, ev in enumerate(events):
        before = book.states[0]
        if (before, ev) in TRANSITIONS:
            assert book.apply(0, ev, float(i)) is TRANSITIONS[(before, ev)]
        else:
            with pytest.raises(IllegalTransition):
                book.apply(0, ev, float(i))
            assert book.states[0] is before


def test_every_state_is_reachable_from_healthy_and_leads_back_to_it():
    succ: dict[HealthState, set[HealthState]] = {}
    for (a, _), b in TRANSITIONS.items():
        succ.setdefault(a, set()).add(b)

    def reach(start: HealthState) -> set[HealthState]:
        seen, todo = {start}, [start]
        while todo:
            for b in succ.get(todo.pop(), ()):
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return seen

    assert reach(S.HEALTHY) == set(S)
    assert all(S.HEALTHY in reach(s) for s in S)


def test_time_out_of_service_adds_every_step():
    """Defaults, repaired in place: 30 + 60 + 0 + 900 + 14,400 + 120 = 15,510 s; with RMA instead
    of repair: 15,510 − 14,400 + 1,209,600 = 1,210,710 s."""
    d = StepDurations()
    assert d.out_of_service_s() == 15_510.0
    assert d.out_of_service_s(rma=True) == 1_210_710.0


# --- one vocabulary: the fleet label is a view of the machine state ------------------------------

from gpufleet.model.fleet import NodeHealth  # noqa: E402
from gpufleet.model.health import ENTRY_STATE, FLEET_LABEL, fleet_label, machine_state  # noqa: E402


def test_every_machine_state_has_a_label_with_the_same_schedulability():
    assert set(FLEET_LABEL) == set(S)
    for s in S:
        assert fleet_label(s).schedulable == s.schedulable, s


def test_every_label_enters_the_machine_at_a_state_with_the_same_schedulability():
    """degraded is schedulable, so it enters as healthy; down enters quarantined (out, awaiting
    diagnosis), never at a state the machine could return to service without the gate."""
    assert set(ENTRY_STATE) == set(NodeHealth)
    for label in NodeHealth:
        assert machine_state(label).schedulable == label.schedulable, label
    assert machine_state(NodeHealth.DOWN) is S.QUARANTINED


def test_a_label_round_trips_through_the_machine_except_degraded_which_is_healthy_with_a_flag():
    for label in NodeHealth:
        expected = NodeHealth.HEALTHY if label is NodeHealth.DEGRADED else label
        assert fleet_label(machine_state(label)) is expected


def test_machine_state_names_are_accepted_where_a_label_is():
    assert machine_state("rma") is S.RMA and machine_state("draining") is S.DRAINING
    assert machine_state(S.PREFLIGHT) is S.PREFLIGHT
    with pytest.raises(ValueError):
        machine_state("broken")


def test_a_book_built_from_labels_reports_the_same_labels_back():
    labels = [NodeHealth.HEALTHY, NodeHealth.DOWN, NodeHealth.DRAINING]
    book = NodeHealthBook.from_labels(labels)
    assert book.states == [S.HEALTHY, S.QUARANTINED, S.DRAINING]
    assert book.labels() == labels
