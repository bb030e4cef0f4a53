"""The pending queue kept by shape class, each class in the engine's order, across cycles.

A job's shape class is ``Job.shape_key``: jobs with equal keys are interchangeable for
feasibility. Inside a class, jobs are kept sorted by the key ``PriorityFifo`` orders by
(−priority, submit time, id), so "the first k waiting jobs of this shape" is a slice, and an
arrival or a start costs a binary search and one list insert/delete (a C ``memmove``), not a
re-sort of the queue.

Two readers:
- the greedy cycle cut (sim/greedy_cut.py), which hands the engine only the head of each class;
- the stranded-capacity sample (sim/step.py), which needs one job per class, not every job.

``dirty`` is per class the jobs whose last logged status may differ from the class's
``settled`` shape (sim/greedy_cut.py keeps both; arrivals and requeues enter dirty).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass, field

from gpufleet.engine.phases.order import OrderKey, order_key
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job


@dataclass
class ShapeQueues:
    #: Per shape class, its waiting jobs' order keys, sorted.
    classes: dict[tuple, list[OrderKey]] = field(default_factory=dict)
    #: Per shape class, waiting jobs whose last logged status is not known to be the settled one.
    dirty: dict[tuple, set[JobId]] = field(default_factory=dict)
    #: Per shape class, the status shape every non-dirty waiting job of the class last logged
    #: (None: unknown, every job must be checked).
    settled: dict[tuple, tuple | None] = field(default_factory=dict)
    #: Per waiting job, when it (re)joined the queue: the order of the engine's pending input
    #: (``SimulatedCluster.pending_view`` lists jobs in that order).
    seq: dict[JobId, int] = field(default_factory=dict)
    _next: int = 0

    def add(self, job: Job) -> None:
        self.seq[job.id] = self._next
        self._next += 1
        c = job.shape_key
        lst = self.classes.get(c)
        if lst is None:
            self.classes[c] = [order_key(job)]
            self.dirty[c] = {job.id}
            self.settled[c] = None
            return
        insort(lst, order_key(job))
        self.dirty[c].add(job.id)

    def remove(self, job: Job) -> None:
        c = job.shape_key
        lst = self.classes[c]
        key = order_key(job)
        i = bisect_left(lst, key)
        if i < len(lst) and lst[i] == key:
            del lst[i]
        self.dirty[c].discard(job.id)
        self.seq.pop(job.id, None)
        if not lst:
            del self.classes[c], self.dirty[c], self.settled[c]

    def first_ids(self) -> list[JobId]:
        """One waiting job per class (the first in order)."""
        return [lst[0][2] for lst in self.classes.values()]

    def unsettle(self) -> None:
        """Statuses were logged for every job (an uncut cycle): no class's settled shape holds."""
        for c in self.settled:
            self.settled[c] = None
