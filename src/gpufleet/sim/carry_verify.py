"""Checking a carried-on EASY cycle against the full cycle at its instant (sim/easy_carry.py).

Used by tests and benchmarks (``simulate(..., verify_carried_cycles=True)``): any difference is a
gap in the proof and raises ``CarryMismatch``.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.status import Status
from gpufleet.engine.types import CycleResult
from gpufleet.model.ids import JobId
from gpufleet.sim.decisions import status_shape
from gpufleet.sim.state import SimState, cycle_input


class CarryMismatch(AssertionError):
    """A carried-on cycle decided otherwise than the full cycle at its instant (a proof gap)."""


def verify(st: SimState, last: Mapping[JobId, Status], carried: CycleResult, seq: int) -> None:
    """Run the full cycle too and check that it decides what the carried-on one did: the same
    starts, bindings and reservations, the new jobs' verdicts, and every old job's verdict of the
    shape it last had (``last``: the last full cycle's verdicts and the carried-on ones since).
    ``seq``: the cycle sequence number (its seed) the full cycle would run with. Raises
    ``CarryMismatch`` naming the instant and what differs."""
    def check(ok: bool, what: object) -> None:
        if not ok:
            raise CarryMismatch(f"t={st.t}: {what}")

    full = run_cycle(cycle_input(st, st.cluster.pending_view(), seq))
    check(full.started == carried.started, ("started", full.started, carried.started))
    check(full.bindings == carried.bindings, "bindings")
    check(full.reservations == carried.reservations, "reservations")
    for jid, status in carried.statuses.items():
        check(full.statuses[jid] == status, (jid, full.statuses[jid], status))
    for jid, status in full.statuses.items():
        if jid in last:
            check(status_shape(status) == status_shape(last[jid]), (jid, status, last[jid]))
        else:
            check(jid in carried.statuses, (jid, "judged by the full cycle only", status))
