"""The pending queue by shape class, each class in the engine's order, kept across cycles.

Jobs with equal ``Job.shape_key`` are interchangeable for feasibility. Inside a class jobs stay
sorted by (−priority, submit time, id), ``PriorityFifo``'s key, so "the first k waiting jobs of
this shape" is a slice, and an arrival or a leaver costs a binary search and one list insert or
delete, not a re-sort. Readers: the cycle cut (engine/cut.py); a sample of stranded capacity (one
job per class); a driver that logs statuses on change (``joined_since``, not a walk of the queue).
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

    __slots__ = ("classes", "_joined", "gpus")

    def __init__(self) -> None:
        self.classes: dict[tuple, list[OrderKey]] = {}
        #: Every id added, in order (a job that left and rejoined appears again): ``joined_since``.
        self._joined: list[JobId] = []
        #: Per class ever seen, the GPUs one job takes; 0 when a pod set asks for no whole GPU or
        #: for a fraction (such classes are never cut).
        self.gpus: dict[tuple, int] = {}

    def add(self, job: Job) -> None:
        self._joined.append(job.id)
        c = job.shape_key
        lst = self.classes.get(c)
        if lst is None:
            self.classes[c] = [order_key(job)]
            if c not in self.gpus:
                whole = all(ps.request.gpus >= 1 and not ps.request.is_fractional for ps in job.pod_sets)
                self.gpus[c] = job.total_gpus if whole else 0
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
