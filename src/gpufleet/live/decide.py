"""The one place the live service calls the engine.

Every cycle the loop runs, every explanation it gives and every estimate comes from here, so
switching the live driver to another cycle API (an incremental cycle that is told what changed)
is a change to this function alone.
"""

from __future__ import annotations

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.types import CycleInput, CycleResult


def decide(inp: CycleInput) -> CycleResult:
    """One engine cycle over the source's state."""
    return run_cycle(inp)
