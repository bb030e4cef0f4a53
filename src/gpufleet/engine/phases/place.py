"""Step 3, place: bind every pod of a job to a node, all or nothing (or, for the per-pod baseline,
pod by pod).

The ``Placer`` is also the one authority on "where would this job go?" for the phases after it:
reservation asks it at future capacity, backfill under a reservation's limits, defragmentation
after hypothetical evictions. So its contract is three methods, all declared here:

- ``place``: bind what fits, in order, on the cycle's plan;
- ``fit``: where each pod of one job would go on a table (left unchanged), or a Status saying why
  it cannot — the placer's full rules (topology, fractional GPUs, one task per node);
- ``feasible``: a cheap yes/no for search loops; None when only ``fit`` can tell. A placer may
  answer None always; it must never answer True or False where ``fit`` would disagree.

Every placer is built from the same parts (policies/filters.py, policies/scorers.py and the one
gang search, policies/gang_search.py), and all three methods honour the job's own node filter
(``Job.eligible_nodes``): no pod is placed, reserved or backfilled on a node outside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status
from gpufleet.engine.types import CycleContext, PendingJob
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job


@dataclass(slots=True)
class PlaceOutcome:
    started: list[JobId] = field(default_factory=list)
    #: Jobs that did not fit, in order; the first is the head-of-line job reservation is for.
    #: A list, or a view of the driver's queue (``engine.queue.QueueView``): any sequence.
    blocked: Sequence[PendingJob] = field(default_factory=list)
    #: The started jobs themselves, in order, when the placer kept them (None: find them by id).
    placed_jobs: list[Job] | None = None


class Placer(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def stop_at_first_blocked(self) -> bool:
        """The first job that does not fit ends the pass (FIFO; EASY's head reservation)."""
        ...

    @property
    def defer(self) -> bool:
        """Only jobs whose protected reservation has come due start here (conservative)."""
        ...

    def place(self, ordered: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> PlaceOutcome:
        """Bind what fits on ``plan``; record a Status on ``ctx.statuses`` for each job left."""
        ...

    def fit(self, job: Job, table: NodeTable, ctx: CycleContext) -> tuple[PodBinding, ...] | Status:
        """Where each pod of ``job`` would go on ``table`` (unchanged), or why it cannot."""
        ...

    def feasible(self, job: Job, table: NodeTable, ctx: CycleContext) -> bool | None:
        """Could ``fit`` place ``job`` on ``table``? None when only ``fit`` can tell."""
        ...
