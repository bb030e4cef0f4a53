"""Equivalence classes of job shapes within one cycle.

Capacity only shrinks while a cycle places jobs, so once a shape has failed, every shape that asks
for at least as much in every dimension fails too and need not be searched again. Keys compare a
job's pod sets; the check is a dominance test against the few shapes that failed so far.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpufleet.engine.status import Status
from gpufleet.model.job import Job


def dominates(big: tuple, small: tuple) -> bool:
    """True when shape ``big`` asks for at least as much as ``small`` in every dimension."""
    if len(big) != len(small):
        return False
    for (rb, shape_b), (rs, shape_s) in zip(big, small, strict=True):
        if rb < 0 or rs < 0:  # a constraint entry (topology, parallelism): must match exactly
            if (rb, shape_b) != (rs, shape_s):
                return False
            continue
        gb, cb, mb, modb = shape_b[:4]
        gs, cs, ms, mods = shape_s[:4]
        if modb != mods or rb < rs or gb < gs or cb < cs or mb < ms:
            return False
        if shape_b[4:] != shape_s[4:]:  # fractional requests (and their tenant) compare exactly
            return False
    return True


def known_unresolvable(key: tuple, verdicts: Mapping[tuple[object, ...], Status]) -> Status | None:
    """The verdict of the first class in ``verdicts`` (shape classes found UNRESOLVABLE this
    cycle: ``Handoffs.unresolvable``) that ``key`` equals or dominates, else None. A shape that
    asks at least as much as one that fits not even the empty fleet cannot fit it either."""
    for shape, status in verdicts.items():
        if shape == key or dominates(key, shape):
            return status
    return None


@dataclass(slots=True)
class FailedShapes:
    """Shapes that failed this cycle, and a memo of which keys they rule out.

    Each key remembers how many failures it has been checked against, so a key is compared with
    each failed shape at most once per cycle: O(keys × failures), not O(jobs × failures).
    """

    failed: list[tuple[tuple, Status]] = field(default_factory=list)
    _verdict: dict[tuple, tuple[int, Status | None]] = field(default_factory=dict)

    def known_failure(self, job: Job) -> Status | None:
        key = job.shape_key
        seen, verdict = self._verdict.get(key, (0, None))
        if verdict is not None or seen == len(self.failed):
            return verdict
        for shape, status in self.failed[seen:]:
            if shape == key or dominates(key, shape):
                verdict = status
                break
        self._verdict[key] = (len(self.failed), verdict)
        return verdict

    def record(self, job: Job, status: Status) -> None:
        self.failed.append((job.shape_key, status))
        self._verdict[job.shape_key] = (len(self.failed), status)
