"""One victim search: release running jobs on the Plan until a job fits, then give back the ones
it does not need. Tenancy preemption (policies/preemption.py) and defragmentation
(policies/defrag.py) are configurations of it; neither keeps its own release-and-retry loop.

A search is configured by:
- ``fits``: with the victims released on the plan, where the beneficiary would go (its bindings),
  or None — the placer's own ``fit`` (defrag) or gang best fit (preemption), both through the
  shared gang search, so the job's node filter and topology rules bind the victims' room too;
- ``allowed``: whether this set of victims may go at all (quota: a reclaim must leave the
  reclaimed tenant above its nominal quota and bring the beneficiary within its own); default
  any set;
- the candidates, in groups (one job, or every movable job on one node), cheapest first, and
  ``ready``: a cheap bound that skips the fit while the victims cannot possibly suffice.

The search, all on the Plan (release, fit, roll back — nothing leaves the engine, no slot is
ever counted twice):
1. ``grow``: add groups in order (a job already chosen is not added twice) until the set is
   allowed and the beneficiary fits;
2. ``reprieve``: in the given order (most expensive first), keep a victim running when the
   beneficiary still fits, allowed, without it;
3. ``settle``: leave the plan with exactly the chosen victims released and return the fit, so
   the caller can bind the beneficiary there (preemption) or check that the victims fit again
   elsewhere (defrag).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

from gpufleet.engine.plan import Plan
from gpufleet.engine.types import RunningJob

R = TypeVar("R")


def release(plan: Plan, victims: Iterable[RunningJob]) -> None:
    """Release every pod of every victim on the plan (a what-if: undone by ``rollback``)."""
    for v in victims:
        for b in v.bindings:
            plan.release_binding(b)


class VictimSearch(Generic[R]):
    """The search in the module doc over ``plan``, from the plan's state at construction."""

    def __init__(self, plan: Plan, fits: Callable[[], R | None],
                 allowed: Callable[[Sequence[RunningJob]], bool] | None = None) -> None:
        self.plan = plan
        self.mark = plan.checkpoint()
        self.fits = fits
        self.allowed = allowed

    def attempt(self, victims: Sequence[RunningJob]) -> R | None:
        """With exactly ``victims`` released (from the starting state): the fit, or None when
        the set is not allowed or the beneficiary does not fit."""
        self.plan.rollback(self.mark)
        if self.allowed is not None and not self.allowed(victims):
            return None
        release(self.plan, victims)
        return self.fits()

    def grow(self, groups: Iterable[Sequence[RunningJob]],
             admit: Callable[[list[RunningJob], RunningJob], bool] | None = None,
             ready: Callable[[list[RunningJob]], bool] | None = None
             ) -> tuple[list[RunningJob], R] | None:
        """Add groups in order until the beneficiary fits: (victims, fit), or None with the plan
        back at its starting state. ``admit`` may skip a candidate given those chosen so far;
        ``ready`` says whether a fit is worth trying yet."""
        chosen: list[RunningJob] = []
        seen: set[str] = set()
        for group in groups:
            new = [v for v in group if v.job.id not in seen
                   and (admit is None or admit(chosen, v))]
            if not new:
                continue
            seen.update(v.job.id for v in new)
            chosen.extend(new)
            if ready is not None and not ready(chosen):
                continue
            fitted = self.attempt(chosen)
            if fitted is not None:
                return chosen, fitted
        self.plan.rollback(self.mark)
        return None

    def reprieve(self, chosen: list[RunningJob], order: Sequence[RunningJob]) -> list[RunningJob]:
        """Try keeping each victim of ``order`` running, in that order; keep it when the
        beneficiary still fits without it (never down to no victims)."""
        for v in order:
            rest = [w for w in chosen if w is not v]
            if rest and self.attempt(rest) is not None:
                chosen = rest
        return chosen

    def settle(self, chosen: Sequence[RunningJob]) -> R | None:
        """Leave the plan with exactly ``chosen`` released; the beneficiary's fit there."""
        return self.attempt(chosen)

    def leave_released(self, chosen: Sequence[RunningJob]) -> None:
        """Leave the plan with exactly ``chosen`` released, without asking for a fit (a placer
        whose ``fit`` draws from the cycle's generator is asked no more often than needed)."""
        self.plan.rollback(self.mark)
        release(self.plan, chosen)

    def undo(self) -> None:
        self.plan.rollback(self.mark)
