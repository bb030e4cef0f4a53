"""The event kernel: one handler per kind, every event of an instant handled before the instant ends."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufleet.sim.kernel import Event, EventKind, EventQueue, Kernel, Outcome


@dataclass
class Tape:
    q: EventQueue = field(default_factory=EventQueue)
    t: float = 0.0
    events: int = 0
    seen: list[tuple[float, str]] = field(default_factory=list)
    instants: list[tuple[float, Outcome]] = field(default_factory=list)


def test_events_at_one_instant_pop_finishes_first_then_failures_then_arrivals_then_cycles():
    tape = Tape()
    for kind in (EventKind.CYCLE, EventKind.ARRIVAL, EventKind.FAILURE, EventKind.FINISH):
        tape.q.push(5.0, kind, kind.name)

    def note(st: Tape, ev: Event) -> Outcome:
        st.seen.append((st.t, ev.payload))
        return Outcome.CHANGED if ev.kind is not EventKind.CYCLE else Outcome.CYCLE_DUE

    Kernel({k: note for k in EventKind}, lambda st, o: st.instants.append((st.t, o))).run(tape)
    assert [p for _, p in tape.seen] == ["FINISH", "FAILURE", "ARRIVAL", "CYCLE"]
    assert tape.instants == [(5.0, Outcome.CHANGED | Outcome.CYCLE_DUE)]
    assert tape.events == 4


def test_a_new_event_kind_is_a_new_handler_and_events_it_pushes_at_now_join_the_same_instant():
    """A HEALTH handler that pushes a follow-up at the same time: both are handled in instant 1;
    the one it pushes 60 s later makes a second instant."""
    tape = Tape()
    tape.q.push(1.0, EventKind.HEALTH, "suspect")

    def health(st: Tape, ev: Event) -> Outcome:
        st.seen.append((st.t, ev.payload))
        if ev.payload == "suspect":
            st.q.push(st.t, EventKind.HEALTH, "draining")
            st.q.push(st.t + 60.0, EventKind.HEALTH, "quarantined")
        return Outcome.NOTHING

    Kernel({EventKind.HEALTH: health}, lambda st, o: st.instants.append((st.t, o))).run(tape)
    assert tape.seen == [(1.0, "suspect"), (1.0, "draining"), (61.0, "quarantined")]
    assert [t for t, _ in tape.instants] == [1.0, 61.0]
