"""A Profile names which policy runs at each step of the cycle, and checks that they agree.

The backfill mode is what the place, reserve and backfill steps do together, read from what each
declares in its protocol (``Placer.stop_at_first_blocked`` / ``defer``, ``Reserver.protect``,
whether a step is its ``none`` policy):

| mode         | place                                 | reserve                | backfill |
|--------------|---------------------------------------|------------------------|----------|
| greedy       | every job in order, whatever fits     | none                   | none     |
| fifo         | in order, stops at the first blocked  | none                   | yes/no   |
| easy         | stops at the first blocked            | the head (protect 1)   | yes      |
| conservative | stops, or starts only due promises    | several (protect > 1)  | yes      |

Any other combination contradicts itself, and building it raises ``ProfileError``: a reservation
behind a greedy placer is passed by later jobs before reserve runs; one with nothing to backfill
around it only delays; a placer that defers to promises nobody makes starts nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from gpufleet.engine.phases.admit import AdmitAll, Admitter
from gpufleet.engine.phases.backfill import Backfiller, NoBackfill
from gpufleet.engine.phases.order import Orderer, PriorityFifo
from gpufleet.engine.phases.place import Placer
from gpufleet.engine.phases.preempt import NoPreemption, Preemptor
from gpufleet.engine.phases.reserve import NoReservation, Reserver


class BackfillMode(Enum):
    GREEDY = "greedy"
    FIFO = "fifo"
    EASY = "easy"
    CONSERVATIVE = "conservative"


class ProfileError(ValueError):
    """The steps of a profile contradict each other (module doc)."""


def backfill_mode(name: str, placer: Placer, reserver: Reserver, backfiller: Backfiller) -> BackfillMode:
    """The mode these three steps make together, or ``ProfileError`` naming the contradiction."""
    reserves = reserver.name != NoReservation.name
    backfills = backfiller.name != NoBackfill.name
    ordered = placer.stop_at_first_blocked or placer.defer
    if not reserves:
        if placer.defer:
            raise ProfileError(f"profile {name!r}: placer {placer.name!r} starts only jobs whose reservation "
                               "is due, but the profile reserves nothing")
        if backfills and not placer.stop_at_first_blocked:
            raise ProfileError(f"profile {name!r}: backfill {backfiller.name!r} after a greedy placer has "
                               "no holes to fill (use mode greedy)")
        return BackfillMode.FIFO if placer.stop_at_first_blocked else BackfillMode.GREEDY
    if not ordered:
        raise ProfileError(f"profile {name!r}: reservation {reserver.name!r} behind greedy placer "
                           f"{placer.name!r}: later jobs pass the blocked head before it is reserved")
    if not backfills:
        raise ProfileError(f"profile {name!r}: reservation {reserver.name!r} with no backfill: nothing "
                           "starts around it (use mode fifo)")
    return BackfillMode.CONSERVATIVE if placer.defer or reserver.protect > 1 else BackfillMode.EASY


@dataclass(frozen=True)
class Profile:
    name: str
    placer: Placer
    admitter: Admitter = field(default_factory=AdmitAll)
    orderer: Orderer = field(default_factory=PriorityFifo)
    reserver: Reserver = field(default_factory=NoReservation)
    backfiller: Backfiller = field(default_factory=NoBackfill)
    preemptor: Preemptor = field(default_factory=NoPreemption)
    #: True for gang policies: a job starts only when all its pods are bound.
    gang: bool = True
    #: Plan with each tenant's record of actual ÷ estimated run time (CycleInput.estimate_accuracy);
    #: False trusts every estimate as given (the naive baseline gaming is measured against).
    estimate_history: bool = True
    #: Read from the steps when the profile is built (``backfill_mode``).
    mode: BackfillMode = field(init=False)

    def __post_init__(self) -> None:
        mode = backfill_mode(self.name, self.placer, self.reserver, self.backfiller)
        object.__setattr__(self, "mode", mode)

    @property
    def period_s(self) -> float:
        """A driver runs a cycle at least this often while jobs run (0: only when something
        happens); a periodic preemptor (defrag) sets it."""
        return self.preemptor.period_s
