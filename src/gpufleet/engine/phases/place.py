"""Step 3, place: bind every pod of a job to a node, all or nothing (or, for the per-pod baseline,
pod by pod)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from gpufleet.engine.plan import Plan
from gpufleet.engine.types import CycleContext, PendingJob
from gpufleet.model.ids import JobId


@dataclass(slots=True)
class PlaceOutcome:
    started: list[JobId] = field(default_factory=list)
    #: Jobs that did not fit, in order; the first is the head-of-line job reservation is for.
    blocked: list[PendingJob] = field(default_factory=list)


class Placer(Protocol):
    name: str

    def place(self, ordered: list[PendingJob], plan: Plan, ctx: CycleContext) -> PlaceOutcome:
        """Bind what fits on ``plan``; write a Status into ``ctx.statuses`` for each job left."""
        ...
