"""Equivalence classes of job shapes within one cycle.

Capacity only shrinks while a cycle places jobs, so once a shape has failed, every shape that asks
for at least as much in every dimension fails too and need not be searched again. Keys compare a
job's pod sets; the check is a dominance test against the few shapes that failed so far.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufleet.engine.status import Status
from gpufleet.model.job import Job


def _dominates(big: tuple, small: tuple) -> bool:
    """True when shape ``big`` asks for at least as much as ``small`` in every dimension."""
    if len(big) != len(small):
        return False
    for (rb, shape_b), (rs, shape_s) in zip(big, small, strict=True):
        gb, cb, mb, modb = shape_b[:4]
        gs, cs, ms, mods = shape_s[:4]
        if modb != mods or rb < rs or gb < gs or cb < cs or mb < ms:
            return False
        if shape_b[4:] != shape_s[4:]:  # fractional requests (and their tenant) compare exactly
            return False
    return True


@dataclass(slots=True)
class FailedShapes:
    failed: dict[tuple, Status] = field(default_factory=dict)

    def known_failure(self, job: Job) -> Status | None:
        key = job.shape_key
        hit = self.failed.get(key)
        if hit is not None:
            return hit
        for shape, status in self.failed.items():
            if _dominates(key, shape):
                return status
        return None

    def record(self, job: Job, status: Status) -> None:
        self.failed[job.shape_key] = status
