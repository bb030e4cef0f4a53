"""Equivalence classes of job shapes within one cycle.

Capacity only shrinks while a cycle places jobs, so once a shape has failed, every shape that asks
for at least as much in every dimension fails too and need not be searched again. Keys compare a
job's pod sets; the check is a dominance test against the few shapes that failed so far.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpufleet.engine.status import Status
from gpufleet.model.shape_key import ShapeKey


def known_unresolvable(key: ShapeKey, verdicts: Mapping[ShapeKey, Status]) -> Status | None:
    """The verdict of the first class in ``verdicts`` (shape classes found UNRESOLVABLE this
    cycle: ``Handoffs.unresolvable``) that ``key`` equals or dominates, else None. A shape that
    asks at least as much as one that fits not even the empty fleet cannot fit it either."""
    for shape, status in verdicts.items():
        if shape == key or key.dominates(shape):
            return status
    return None


class Dominance:
    """The classes that equal or dominate each class of ``keys``, as index lists, memoised: the
    place walk and the backfill scan kill every class that dominates a failed one, and a
    congested queue fails a few classes per cycle against tens of classes each time.

    Plain keys (``ShapeKey.plain``) compare as five numbers in a tuple (no call, no unpacking of
    nested tuples); any other failed key is compared with each key by ``dominates`` itself.
    The "not less than" form keeps ``dominates``' answers even for a NaN."""

    __slots__ = ("keys", "rows", "_memo")

    def __init__(self, keys: list[ShapeKey]) -> None:
        self.keys = keys
        self.rows = [k.plain() for k in keys]
        self._memo: dict[int, list[int]] = {}

    def over(self, c: int) -> list[int]:
        """``[d for d in range(len(keys)) if d == c or keys[d].dominates(keys[c])]``."""
        out = self._memo.get(c)
        if out is not None:
            return out
        small = self.rows[c]
        if small is not None:
            r, g, cp, m, mod = small
            out = [d for d, row in enumerate(self.rows)
                   if d == c or (row is not None and row[4] == mod and not (
                       row[0] < r or row[1] < g or row[2] < cp or row[3] < m))]
        else:
            key = self.keys[c]
            out = [d for d, k in enumerate(self.keys) if d == c or k.dominates(key)]
        self._memo[c] = out
        return out
