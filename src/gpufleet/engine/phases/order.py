"""Step 2, order: the sequence in which admitted jobs are tried."""

from __future__ import annotations

from typing import Protocol

from gpufleet.engine.types import CycleContext, PendingJob


class Orderer(Protocol):
    name: str

    def order(self, admitted: list[PendingJob], ctx: CycleContext) -> list[PendingJob]: ...


class PriorityFifo:
    """Priority (high first), then submit time, then id: a total, stable order."""

    name = "priority-fifo"

    def order(self, admitted: list[PendingJob], ctx: CycleContext) -> list[PendingJob]:
        return sorted(admitted, key=lambda p: (-p.job.priority, p.job.submit_time, p.job.id))
