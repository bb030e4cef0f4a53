"""A job's shape class: what decides whether it fits, and the order between classes.

Jobs with equal keys are interchangeable for feasibility. ``big.dominates(small)`` when ``big``
asks at least as much as ``small`` in every dimension, so that a class that failed on some free
capacity rules out, on the same or less, every class that dominates it:

- the same number of pod sets, and per pod set at least as many replicas, GPUs, CPUs and
  memory on the same GPU models, with any fractional part (share mode, milli, GPU memory, MIG
  profile and, for a soft share, the tenant) equal;
- equal constraints (topology rule, parallelism, training profile) and an equal node filter:
  a job that may use other nodes, or must keep a TP group whole, is neither ruled out by nor
  rules out one that need not.

The comparisons are "not less than", so a NaN in a request never rules a class out.
"""

from __future__ import annotations

from typing import NamedTuple

#: Per pod set: (replicas, PodRequest.shape), the shape with the tenant appended for a soft share.
PodShapes = tuple[tuple[int, tuple], ...]


class ShapeKey(NamedTuple):
    pods: PodShapes
    #: (topology_required, topology_preferred, parallelism, training) when any is set, else None.
    constraints: tuple[object, ...] | None = None
    eligible: frozenset[str] | None = None

    def dominates(self, small: ShapeKey) -> bool:
        """True when this class asks at least as much as ``small`` in every dimension (module doc)."""
        if (len(self.pods) != len(small.pods) or self.constraints != small.constraints
                or self.eligible != small.eligible):
            return False
        for (rb, shape_b), (rs, shape_s) in zip(self.pods, small.pods, strict=True):
            gb, cb, mb, modb = shape_b[:4]
            gs, cs, ms, mods = shape_s[:4]
            if modb != mods or rb < rs or gb < gs or cb < cs or mb < ms:
                return False
            if shape_b[4:] != shape_s[4:]:
                return False
        return True

    def plain(self) -> tuple[int, float, float, float, tuple[str, ...]] | None:
        """(replicas, GPUs, CPUs, memory, models) of a key with one whole-GPU pod set and no
        constraint or node filter, else None. Between plain keys ``dominates`` is four ≥ tests
        and an equal model tuple, and a plain key is dominated only by plain keys."""
        if len(self.pods) != 1 or self.constraints is not None or self.eligible is not None:
            return None
        r, shape = self.pods[0]
        if len(shape) != 4:
            return None
        return (r, shape[0], shape[1], shape[2], shape[3])
