"""One victim search: release running jobs on the Plan until a job fits, then give back the ones
it does not need. Tenancy preemption (policies/preemption.py), defragmentation
(policies/defrag.py) and Kueue's classical and fair-sharing targets (policies/kueue/targets.py,
kueue/fair.py) are configurations of it; none keeps its own release-and-retry loop.

A search is configured by:
- ``fits``: with the victims released on the plan, where the beneficiary would go (its bindings),
  or None — the profile's placer's own ``fit``, so the job's node filter, topology and
  fractional rules bind the victims' room too; ``lambda: True`` with no plan is a search on
  quota alone (Kueue's oracle, which its flavour assigner asks);
- ``allowed``: whether this set of victims may go at all (quota: a reclaim must leave the
  reclaimed tenant above its nominal quota and bring the beneficiary within its own; Kueue's
  quota test with or without borrowing); default any set;
- the candidates, in groups (one job, or every movable job on one node), in the caller's order
  (cheapest first; Kueue's candidate order), ``admit``: whether a candidate still counts given
  those chosen so far (Kueue skips one whose queue stopped borrowing), and ``ready``: a cheap
  bound that skips the fit while the victims cannot possibly suffice.

The search, all on the Plan (release, fit, roll back — nothing leaves the engine, no slot is
ever counted twice):
1. ``grow``: add groups in order (a job already chosen is not added twice) until the set is
   allowed and the beneficiary fits;
2. ``reprieve``: in the given order (most expensive first), keep a victim running when the
   beneficiary still fits, allowed, without it; ``fill_back`` is Kueue's order for it (from the
   second-to-last victim back to the first);
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
    """Release every pod of every victim on the plan (a what-if: undone by ``rollback``). A
    binding on no node (node < 0: a Kueue quota reservation whose pods have not started) holds
    quota only, so there is nothing to release on the nodes."""
    for v in victims:
        for b in v.bindings:
            if b.node >= 0:
                plan.release_binding(b)


class VictimSearch(Generic[R]):
    """The search in the module doc over ``plan`` (None: quota alone), from the plan's state at
    construction."""

    def __init__(self, plan: Plan | None, fits: Callable[[], R | None],
                 allowed: Callable[[Sequence[RunningJob]], bool] | None = None) -> None:
        self.plan = plan
        self.mark = plan.checkpoint() if plan is not None else (0, 0)
        self.fits = fits
        self.allowed = allowed

    def attempt(self, victims: Sequence[RunningJob]) -> R | None:
        """With exactly ``victims`` released (from the starting state): the fit, or None when
        the set is not allowed or the beneficiary does not fit."""
        self.undo()
        if self.allowed is not None and not self.allowed(victims):
            return None
        if self.plan is not None:
            release(self.plan, victims)
        return self.fits()

    def grow(self, groups: Iterable[Sequence[RunningJob]],
             admit: Callable[[list[RunningJob], RunningJob], bool] | None = None,
             ready: Callable[[list[RunningJob]], bool] | None = None
             ) -> tuple[list[RunningJob], R] | None:
        """Add groups in order until the beneficiary fits: (victims, fit), or None with the plan
        back at its starting state. ``admit`` may skip a candidate given those chosen before it;
        ``ready`` says whether a fit is worth trying yet."""
        chosen: list[RunningJob] = []
        seen: set[str] = set()
        for group in groups:
            new = 0
            for v in group:  # (a loop, not comprehensions: Kueue's walk runs it per candidate)
                if v.job.id not in seen and (admit is None or admit(chosen, v)):
                    seen.add(v.job.id)
                    chosen.append(v)
                    new += 1
            if not new:
                continue
            if ready is not None and not ready(chosen):
                continue
            fitted = self.attempt(chosen)
            if fitted is not None:
                return chosen, fitted
        self.undo()
        return None

    def reprieve(self, chosen: list[RunningJob], order: Sequence[RunningJob]) -> list[RunningJob]:
        """Try keeping each victim of ``order`` running, in that order; keep it when the
        beneficiary still fits without it (never down to no victims)."""
        for v in order:
            rest = [w for w in chosen if w is not v]
            if rest and self.attempt(rest) is not None:
                chosen = rest
        return chosen

    def fill_back(self, chosen: list[RunningJob]) -> list[RunningJob]:
        """Kueue's ``fillBackWorkloads``: ``reprieve`` from the second-to-last victim back to the
        first (the last one is what made the beneficiary fit)."""
        return self.reprieve(chosen, chosen[-2::-1])

    def settle(self, chosen: Sequence[RunningJob]) -> R | None:
        """Leave the plan with exactly ``chosen`` released; the beneficiary's fit there."""
        return self.attempt(chosen)

    def leave_released(self, chosen: Sequence[RunningJob]) -> None:
        """Leave the plan with exactly ``chosen`` released, without asking for a fit (a placer
        whose ``fit`` draws from the cycle's generator is asked no more often than needed)."""
        self.undo()
        if self.plan is not None:
            release(self.plan, chosen)

    def undo(self) -> None:
        if self.plan is not None:
            self.plan.rollback(self.mark)
