"""Step 4, reserve: hold future capacity for a blocked head-of-line job so backfill cannot starve it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gpufleet.engine.plan import Plan
from gpufleet.engine.reuse import Reuse
from gpufleet.engine.types import CycleContext, PendingJob, Reservation


class Reserver(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def protect(self) -> int:
        """How many reservations backfill may not delay (1: EASY; more: conservative)."""
        ...

    def reserve(self, blocked: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> list[Reservation]: ...


class NoReservation:
    name = "none"
    protect = 0

    def reuse(self) -> Reuse:
        return Reuse(inert=True)

    def reserve(self, blocked: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> list[Reservation]:
        return []
