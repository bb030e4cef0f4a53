"""The one place the live service calls the engine.

Every cycle the loop runs, every explanation it gives and every estimate comes from here. It is
the engine's incremental cycle (engine/incremental.py): the loop says what changed since the last
cycle (``CycleDelta``: the jobs that arrived, or "something else", which asks for the full cycle)
and keeps the engine's memo between cycles. Under a profile whose policies declare a shortcut
(strict FIFO: arrivals behind the job the last pass stopped at; greedy placement: arrivals too
big for the free capacity), a tick that only brought such arrivals is answered without a cycle
over the whole queue; under the others (gang-easy, the default: reservations and backfill) every
cycle is full, as before.
"""

from __future__ import annotations

from gpufleet.engine.incremental import CycleDelta, CycleMemo, run_incremental
from gpufleet.engine.types import CycleInput, CycleResult


def decide(inp: CycleInput, delta: CycleDelta | None = None, memo: CycleMemo | None = None,
           *, verify: bool = False) -> tuple[CycleResult, CycleMemo]:
    """One engine cycle over the source's state, and the memo for the next one (``verify``:
    the full cycle beside a reused answer, as ``run_incremental`` does)."""
    return run_incremental(memo or CycleMemo(), delta or CycleDelta.unknown(), inp, verify=verify)
