"""Step 6, preempt: evict whole running gangs to make room, only when the beneficiary then fits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gpufleet.engine.plan import Plan
from gpufleet.engine.reuse import Reuse
from gpufleet.engine.types import CycleContext, PendingJob, Preemption


class Preemptor(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def period_s(self) -> float:
        """Look again after this long even if nothing changed (0: only on events)."""
        ...

    def preempt(self, blocked: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> list[Preemption]: ...


class NoPreemption:
    name = "none"
    period_s = 0.0

    def reuse(self) -> Reuse:
        return Reuse(inert=True)

    def preempt(self, blocked: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> list[Preemption]:
        return []
