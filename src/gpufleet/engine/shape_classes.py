"""The pending queue by shape class, each class in the engine's order, kept across cycles.

A job's shape class is ``Job.shape_key``: jobs with equal keys are interchangeable for
feasibility. Inside a class, jobs are kept sorted by the key ``PriorityFifo`` orders by
(−priority, submit time, id), so "the first k waiting jobs of this shape" is a slice, and an
arrival or a leaver costs a binary search and one list insert/delete (a C ``memmove``), not a
re-sort of the queue. ``PendingQueue`` keeps one beside its columns.

Readers: the cycle cut (engine/cut.py) hands the engine only the head of each class; a sample of
stranded capacity needs one job per class; a driver that logs statuses on change asks which jobs
joined since it last looked (``joined_since``), instead of walking the queue.
"""

from __future__ import annotations

from bisect import bisect_left, insort

from gpufleet.model.ids import JobId
from gpufleet.model.job import Job

#: The priority-FIFO order: (−priority, submit time, id).
OrderKey = tuple[int, float, JobId]


def order_key(job: Job) -> OrderKey:
    return (-job.priority, job.submit_time, job.id)


class ShapeClasses:
    """Per shape class, its waiting jobs' order keys, sorted; and the ids in the order they joined."""

    __slots__ = ("classes", "_joined", "_gpus")

    def __init__(self) -> None:
        self.classes: dict[tuple, list[OrderKey]] = {}
        #: Every id added, in order (a job that left and rejoined appears again): ``joined_since``.
        self._joined: list[JobId] = []
        self._gpus: dict[tuple, int] = {}

    def add(self, job: Job) -> None:
        self._joined.append(job.id)
        lst = self.classes.get(job.shape_key)
        if lst is None:
            self.classes[job.shape_key] = [order_key(job)]
        else:
            insort(lst, order_key(job))

    def remove(self, job: Job) -> None:
        c = job.shape_key
        lst = self.classes[c]
        key = order_key(job)
        i = bisect_left(lst, key)
        if i < len(lst) and lst[i] == key:
            del lst[i]
        if not lst:
            del self.classes[c]

    def first_ids(self) -> list[JobId]:
        """One waiting job per class (the first in order)."""
        return [lst[0][2] for lst in self.classes.values()]

    @property
    def mark(self) -> int:
        """A position in the join order: ``joined_since(mark)`` lists the ids added after now."""
        return len(self._joined)

    def joined_since(self, mark: int) -> list[JobId]:
        """Ids added after ``mark`` (some may have left since)."""
        return self._joined[mark:]

    def whole_gpus(self, key: tuple, job: Job) -> int:
        """GPUs one job of class ``key`` (``job`` is one) takes; 0 when a pod set asks for no whole
        GPU or for a fraction (such classes are never cut)."""
        g = self._gpus.get(key)
        if g is None:
            whole = all(ps.request.gpus >= 1 and not ps.request.is_fractional for ps in job.pod_sets)
            g = self._gpus[key] = job.total_gpus if whole else 0
        return g
