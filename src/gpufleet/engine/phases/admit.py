"""Step 1, admit: which pending jobs may use quota this cycle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gpufleet.engine.queue import PendingQueue
from gpufleet.engine.reuse import Reuse
from gpufleet.engine.types import CycleContext, PendingJob


class Admitter(Protocol):
    @property
    def name(self) -> str: ...

    def admit(self, pending: Sequence[PendingJob], ctx: CycleContext) -> Sequence[PendingJob]:
        """Return the admitted jobs (a list, or the driver's queue itself when all are admitted);
        write a NOT_ADMITTED status into ``ctx.statuses`` for the rest."""
        ...


class AdmitAll:
    """No quotas: every pending job is admitted."""

    name = "admit-all"

    def reuse(self) -> Reuse:
        return Reuse(inert=True)

    def admit(self, pending: Sequence[PendingJob], ctx: CycleContext) -> Sequence[PendingJob]:
        if isinstance(pending, PendingQueue):  # the driver's columns, read-only here: no copy
            return pending
        return list(pending)
