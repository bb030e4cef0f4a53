"""Step 5, backfill: start later jobs in the holes, only where they cannot delay a reservation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gpufleet.engine.phases.place import PlaceOutcome
from gpufleet.engine.plan import Plan
from gpufleet.engine.reuse import Reuse
from gpufleet.engine.types import CycleContext, PendingJob, Reservation


class Backfiller(Protocol):
    @property
    def name(self) -> str: ...

    def backfill(self, blocked: Sequence[PendingJob], reservations: list[Reservation], plan: Plan,
                 ctx: CycleContext) -> PlaceOutcome: ...


class NoBackfill:
    """Placement already tried every job greedily; nothing more to start."""

    name = "none"

    def reuse(self) -> Reuse:
        return Reuse(inert=True)

    def backfill(self, blocked: Sequence[PendingJob], reservations: list[Reservation], plan: Plan,
                 ctx: CycleContext) -> PlaceOutcome:
        return PlaceOutcome()
