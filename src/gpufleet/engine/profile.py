"""A Profile names which policy runs at each step of the cycle."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufleet.engine.phases.admit import AdmitAll, Admitter
from gpufleet.engine.phases.backfill import Backfiller, NoBackfill
from gpufleet.engine.phases.order import Orderer, PriorityFifo
from gpufleet.engine.phases.place import Placer
from gpufleet.engine.phases.preempt import NoPreemption, Preemptor
from gpufleet.engine.phases.reserve import NoReservation, Reserver


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
