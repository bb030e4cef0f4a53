"""What a policy can reuse from the last cycle, declared by the policy itself.

An incremental cycle (engine/incremental.py) may answer without running every step only when each
step's policy promises that the shortcut decides what the step would. No driver may find that out
by checking concrete types; a policy says it, by implementing ``Reusable``:

    class GangBestFit:
        def reuse(self) -> Reuse:
            return Reuse(monotone_classes=not self.defer, stops_at_blocked=self.stop_at_first_blocked)

A policy that declares nothing can reuse nothing (``reuse_of`` answers ``Reuse()``), so a new
policy is correct by default and fast once it states its promises. ``CycleReuse`` combines the
six declarations of a profile into the rules the incremental cycle and the simulator apply; each
rule lists the promises its proof rests on (the proofs live with the rules: engine/incremental.py,
engine/cut.py, policies/backfill_carry.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from gpufleet.engine.profile import Profile


@dataclass(frozen=True, slots=True)
class Reuse:
    """One policy's promises about what stays true from one cycle to the next."""

    #: The step decides nothing: admits every job, reserves, backfills or preempts nothing, and
    #: keeps no state across cycles.
    inert: bool = False
    #: Order: jobs are tried by the key (−priority, submit time, id) alone, so a job that arrives
    #: later than another of its priority is tried after it.
    priority_fifo: bool = False
    #: Place: whole gangs, in the given order, each searched against what is free now; whether a
    #: job fits depends on its shape class (``Job.shape_key``) and the free capacity only, and is
    #: monotone in free capacity (a class that failed fails again on less).
    monotone_classes: bool = False
    #: Place: the pass ends at the first job that does not fit (strict FIFO).
    stops_at_blocked: bool = False
    #: Reserve: the first ``promises`` blocked jobs keep last cycle's reservation while nothing it
    #: rests on moved (no window, no time grid, no compression; ``protects`` ≥ 1 protected). 0: none.
    promises: int = 0
    #: Backfill: the scan leaves a trace (``BackfillTrace``) that can be continued over jobs queued
    #: behind every candidate it saw (policies/backfill_continue.py).
    continues_scan: bool = False


@runtime_checkable
class Reusable(Protocol):
    """A policy that declares what it can reuse."""

    def reuse(self) -> Reuse: ...


def reuse_of(policy: object) -> Reuse:
    """The policy's declaration; nothing reusable when it declares none."""
    return policy.reuse() if isinstance(policy, Reusable) else Reuse()


#: How a cycle's pending input may be cut to the jobs that can change its decisions.
CutMode = Literal["greedy", "fifo"]


@dataclass(frozen=True, slots=True)
class CycleReuse:
    """The shortcuts a profile allows, derived once from its policies' declarations."""

    #: Arrivals that provably cannot fit change nothing (engine/incremental.py, rule 1): greedy
    #: gang placement in any order, every other step inert.
    unfit_arrivals: bool = False
    #: Arrivals queued behind the job a strict-FIFO pass stopped at change nothing but their own
    #: status (engine/incremental.py, rule 2).
    behind_stop: bool = False
    #: The pending input may be cut per shape class or along the queue (engine/cut.py).
    cut: CutMode | None = None
    #: EASY cycles may be carried on from the last one's backfill trace (policies/backfill_carry.py); the
    #: reserver's ``promises`` is how many reservations such a cycle keeps.
    carry_scan: bool = False
    promises: int = 0

    @classmethod
    def of(cls, profile: Profile) -> CycleReuse:
        place = reuse_of(profile.placer)
        order = reuse_of(profile.orderer)
        admit, reserve = reuse_of(profile.admitter), reuse_of(profile.reserver)
        backfill, preempt = reuse_of(profile.backfiller), reuse_of(profile.preemptor)
        gang = profile.gang and place.monotone_classes
        greedy = gang and admit.inert and reserve.inert and backfill.inert and preempt.inert
        cut: CutMode | None = None
        if greedy and order.priority_fifo:
            cut = "fifo" if place.stops_at_blocked else "greedy"
        carry = (gang and place.stops_at_blocked and order.priority_fifo and admit.inert
                 and reserve.promises > 0 and backfill.continues_scan and preempt.inert)
        return cls(unfit_arrivals=greedy and not place.stops_at_blocked,
                   behind_stop=cut == "fifo", cut=cut, carry_scan=carry,
                   promises=reserve.promises if carry else 0)
