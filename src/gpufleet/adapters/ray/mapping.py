"""Ray placement groups as gangs (translation only: Ray's words in, our Job and Profile out).

A placement group is a list of *bundles* (resource dicts: ``{"GPU": 2, "CPU": 4}``) reserved all or
nothing, with a strategy:

- STRICT_PACK (all bundles on one node, or not at all): one pod whose request is the bundles' sum.
- PACK (as few nodes as possible, best effort): ``topology_preferred="node"``, topology-aware placer.
- STRICT_SPREAD (every bundle on a different node, or not at all): one pod per node (``OneTaskPerNode``).
- SPREAD (different nodes where possible, best effort): one pod per node if that fits now, else PACK.

Bundles become pods: a run of identical consecutive bundles is one pod set (``bundle-0`` …), so
bundle *i* is replica *i − first index of its run*. STRICT_PACK is exactly "one pod whose request
is the sum of the bundles" (all on one node ⇔ the sum fits one node), so it is mapped that way
rather than as a node-level constraint over several pod sets. All-or-nothing is the gang itself. Ray's
"a node" is a Ray node: on Kubernetes (KubeRay) a Ray worker *pod*, which the layer below places
on a machine; ``raycluster.py`` has that second level.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gpufleet.engine.profile import Profile
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.gang import GangBestFit
from gpufleet.policies.slurm_like import OneTaskPerNode
from gpufleet.policies.topology import TopologyAware


class Strategy(StrEnum):
    STRICT_PACK = "STRICT_PACK"
    PACK = "PACK"
    SPREAD = "SPREAD"
    STRICT_SPREAD = "STRICT_SPREAD"


@dataclass(frozen=True)
class Bundle:
    gpus: int
    cpus: float = 0.0
    memory_gb: float = 0.0

    @classmethod
    def from_ray(cls, resources: dict[str, float]) -> Bundle:
        """``{"GPU": 2, "CPU": 4, "memory": 2**30}`` (Ray counts memory in bytes)."""
        unknown = set(resources) - {"GPU", "CPU", "memory"}
        if unknown:
            raise ValueError(f"bundle resources {sorted(unknown)} have no counterpart; "
                             "expected GPU, CPU, memory")
        gpus = resources.get("GPU", 0)
        if gpus != int(gpus):
            raise ValueError(f"a bundle of {gpus} GPUs: fractional GPU bundles are not mapped")
        return cls(int(gpus), float(resources.get("CPU", 0)), float(resources.get("memory", 0)) / 2**30)

    def to_ray(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self.gpus:
            out["GPU"] = self.gpus
        if self.cpus:
            out["CPU"] = self.cpus
        if self.memory_gb:
            out["memory"] = self.memory_gb * 2**30
        return out


@dataclass(frozen=True)
class PlacementGroupSpec:
    name: str
    bundles: tuple[Bundle, ...]
    strategy: Strategy

    def __post_init__(self) -> None:
        if not self.bundles:
            raise ValueError(f"placement group {self.name}: no bundles")

    @property
    def gpus(self) -> int:
        return sum(b.gpus for b in self.bundles)


def bundle_runs(bundles: tuple[Bundle, ...]) -> list[tuple[Bundle, int, int]]:
    """(bundle, first index, count) for each run of identical consecutive bundles."""
    runs: list[tuple[Bundle, int, int]] = []
    for i, b in enumerate(bundles):
        if runs and runs[-1][0] == b:
            runs[-1] = (b, runs[-1][1], runs[-1][2] + 1)
        else:
            runs.append((b, i, 1))
    return runs


def to_job(pg: PlacementGroupSpec, tenant: str = "ray", run_time: float = 3600.0,
           submit_time: float = 0.0) -> Job:
    """The gang a placement group is: one pod per bundle, the strategy as a topology constraint."""
    if pg.strategy is Strategy.STRICT_PACK:
        total = PodRequest(pg.gpus, sum(b.cpus for b in pg.bundles), sum(b.memory_gb for b in pg.bundles))
        return Job(JobId(pg.name), TenantId(tenant), (PodSet("bundles", 1, total),), submit_time, run_time)
    runs = bundle_runs(pg.bundles)
    if pg.strategy is Strategy.STRICT_SPREAD and len(runs) > 1:
        raise ValueError(f"placement group {pg.name}: STRICT_SPREAD of unequal bundles is not mapped "
                         "(one pod per node holds within a pod set only)")
    sets = tuple(PodSet(f"bundle-{k}", n, PodRequest(b.gpus, b.cpus, b.memory_gb))
                 for k, (b, _, n) in enumerate(runs))
    return Job(JobId(pg.name), TenantId(tenant), sets, submit_time, run_time,
               topology_preferred="node" if pg.strategy is Strategy.PACK else None)


def bundle_index(pg: PlacementGroupSpec, pod_set: str, replica: int) -> int:
    """Bundle number of pod ``replica`` of pod set ``pod_set`` (inverse of ``to_job``; the one pod of
    a STRICT_PACK group holds every bundle: -1)."""
    if pod_set == "bundles":
        return -1
    _, first, count = bundle_runs(pg.bundles)[int(pod_set.removeprefix("bundle-"))]
    if not 0 <= replica < count:
        raise ValueError(f"{pod_set} has {count} bundles; no replica {replica}")
    return first + replica


def profiles_for(strategy: Strategy) -> list[Profile]:
    """The engine profiles that place a group of this strategy, tried in order (SPREAD: strict
    spread first, then anything)."""
    spread = Profile("ray-strict-spread", placer=OneTaskPerNode())
    pack = Profile("ray-pack", placer=TopologyAware())  # honours topology_preferred="node"
    return {
        Strategy.STRICT_PACK: [Profile("ray-strict-pack", placer=GangBestFit())],
        Strategy.PACK: [pack],
        Strategy.STRICT_SPREAD: [spread],
        Strategy.SPREAD: [spread, pack],
    }[strategy]
