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
