"""Policy profiles by name: what `--policy NAME` selects."""

from __future__ import annotations

from collections.abc import Callable

from gpufleet.engine.phases.admit import AdmitAll, Admitter
from gpufleet.engine.phases.backfill import Backfiller, NoBackfill
from gpufleet.engine.phases.order import Orderer, PriorityFifo
from gpufleet.engine.phases.place import Placer
from gpufleet.engine.phases.preempt import NoPreemption, Preemptor
from gpufleet.engine.phases.reserve import NoReservation, Reserver
from gpufleet.engine.profile import BackfillMode, Profile
from gpufleet.model.fleet import Fabric
from gpufleet.policies.backfill import ReservationBackfill, ShadowReserver
from gpufleet.policies.defrag import DefragPreemptor
from gpufleet.policies.fairshare import (
    DominantResourceFairShare,
    FirstComeFirstServed,
    GuaranteedFirst,
    SlurmClassicFairShare,
    SmallestJobFirst,
)
from gpufleet.policies.fractional import FractionalGangFit
from gpufleet.policies.gang import GangBestFit
from gpufleet.policies.kueue.admit import KueueAdmitter, KueueOrder
from gpufleet.policies.kueue.preemption import KueuePreemptor
from gpufleet.policies.per_pod import PerPodLeastAllocated
from gpufleet.policies.preemption import TenancyPreemptor
from gpufleet.policies.quota import QuotaAdmitter
from gpufleet.policies.topology import TopologyAware
from gpufleet.policies.topology_blind import TopologyBlind

FIFO, EASY, CONSERVATIVE = BackfillMode.FIFO, BackfillMode.EASY, BackfillMode.CONSERVATIVE


def with_mode(name: str, mode: BackfillMode, placer: Callable[[bool, bool], Placer], *,
              admitter: Admitter | None = None, orderer: Orderer | None = None,
              preemptor: Preemptor | None = None, estimate_history: bool = True) -> Profile:
    """A profile whose place, reserve and backfill steps are ``mode``'s (engine/profile.py):
    ``placer(stop_at_first_blocked, defer)`` builds the placer; EASY reserves for the head job,
    CONSERVATIVE promises 16 jobs a start, protects 8 and places only promises come due."""
    stop, defer = mode in (FIFO, EASY), mode is CONSERVATIVE
    reserver: Reserver = NoReservation()
    backfiller: Backfiller = NoBackfill()
    if mode is EASY:
        reserver, backfiller = ShadowReserver(protect=1), ReservationBackfill()
    elif mode is CONSERVATIVE:
        reserver = ShadowReserver(protect=8, depth=16, compress=True)
        backfiller = ReservationBackfill("conservative")
    return Profile(name, placer(stop, defer), admitter or AdmitAll(), orderer or PriorityFifo(), reserver,
                   backfiller, preemptor or NoPreemption(), estimate_history=estimate_history)


def gang(stop: bool, defer: bool) -> Placer:
    return GangBestFit(stop_at_first_blocked=stop, defer=defer)


PROFILES: dict[str, Callable[[], Profile]] = {
    "gang-bestfit": lambda: Profile("gang-bestfit", placer=GangBestFit()),
    "per-pod": lambda: Profile("per-pod", placer=PerPodLeastAllocated(), gang=False),
    # Strict FIFO: gang best-fit that stops at the first job that does not fit (no reservation, no
    # backfill) - Tiresias's `fifo` schedule, as `gang-bestfit` is its `fjf` (bench/tiresias.py).
    "gang-fifo": lambda: with_mode("gang-fifo", FIFO, gang),
    "gang-easy": lambda: with_mode("gang-easy", EASY, gang),
    "gang-easy-trusting": lambda: with_mode("gang-easy-trusting", EASY, gang, estimate_history=False),
    "gang-conservative": lambda: with_mode("gang-conservative", CONSERVATIVE, gang),
    "topology-aware": lambda: Profile("topology-aware", placer=TopologyAware()),
    "topology-blind": lambda: Profile("topology-blind", placer=TopologyBlind()),
    "topology-easy": lambda: topology_easy(None),
    # Multi-tenant admission (CycleInput.tenancy carries the quotas): policies/quota.py et al.
    "tenancy": lambda: tenancy_profile("tenancy"),
    "tenancy-easy": lambda: tenancy_profile("tenancy-easy", backfill=True),
    "tenancy-naive-victims": lambda: tenancy_profile("tenancy-naive-victims", victims="naive"),
    "tenancy-slurm": lambda: tenancy_profile("tenancy-slurm", order=SlurmClassicFairShare()),
    # Kueue's own rules (per-queue preemption policies, fair sharing, StrictFIFO): docs/kueue.md.
    "kueue": lambda: Profile("kueue", placer=GangBestFit(), admitter=KueueAdmitter(),
                             orderer=KueueOrder(), preemptor=KueuePreemptor()),
    "static-partitions": lambda: Profile("static-partitions", placer=GangBestFit(),
                                         admitter=QuotaAdmitter(FirstComeFirstServed(), borrowing=False),
                                         orderer=FirstComeFirstServed()),
    "free-for-all": lambda: Profile("free-for-all", placer=GangBestFit(), orderer=FirstComeFirstServed()),
    "smallest-first": lambda: Profile("smallest-first", placer=GangBestFit(), orderer=SmallestJobFirst()),
    # Fractional GPUs (MIG, soft shares, the tenant rule) and defragmentation: policies/fractional.py,
    # policies/defrag.py.
    "gang-fractional": lambda: Profile("gang-fractional", placer=FractionalGangFit()),
    "gang-defrag-naive": lambda: Profile("gang-defrag-naive", placer=FractionalGangFit(),
                                         preemptor=DefragPreemptor("smallest")),
    "gang-defrag": lambda: Profile("gang-defrag", placer=FractionalGangFit(),
                                   preemptor=DefragPreemptor("cost")),
}

def tenancy_profile(name: str, order: Orderer | None = None, victims: str = "checkpoint-aware",
                    backfill: bool = False) -> Profile:
    """The four layers: quota admission, fair-share order, gang placement, tenancy preemption;
    with ``backfill``, also a reservation for the head job and EASY backfill around it."""
    admitter = QuotaAdmitter(order or DominantResourceFairShare())
    return with_mode(name, EASY if backfill else BackfillMode.GREEDY, gang, admitter=admitter,
                     orderer=GuaranteedFirst(), preemptor=TenancyPreemptor(admitter, victims))


def topology_easy(fabric: Fabric | None) -> Profile:
    """Topology-aware placement with a reservation for the head job and EASY backfill: the
    reservation is found with the topology placer's own ``fit``, so it holds a TP-intact slot."""
    def placer(stop: bool, defer: bool) -> Placer:
        return TopologyAware(stop_at_first_blocked=stop) if fabric is None else \
            TopologyAware(fabric=fabric, stop_at_first_blocked=stop)

    return with_mode("topology-easy", EASY, placer)


#: Profiles whose placer prices placements with the fleet's fabric (link speeds, oversubscription).
FABRIC_PROFILES: dict[str, Callable[[Fabric], Profile]] = {
    "topology-aware": lambda f: Profile("topology-aware", placer=TopologyAware(fabric=f)),
    "topology-easy": lambda f: topology_easy(f),
}


class UnknownPolicy(ValueError):
    pass


def profile(name: str, fabric: Fabric | None = None) -> Profile:
    """The profile called ``name``; with ``fabric``, placers that price links use that fabric."""
    if fabric is not None and name in FABRIC_PROFILES:
        return FABRIC_PROFILES[name](fabric)
    try:
        return PROFILES[name]()
    except KeyError:
        raise UnknownPolicy(f"unknown policy {name!r}; expected one of {', '.join(PROFILES)}") from None
