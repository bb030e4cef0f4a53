"""Fluent builders for fleets and jobs, for our tests and our users' tests.

    job("a").tenant("t1").gpus(8).gang(4).build()      # 4 pods × 8 GPUs
    fleet().leaves(2, nodes=4, gpus=8).build()          # 2 leaves × 4 nodes × 8 GPUs
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpufleet.model.fleet import Fabric, Fleet, NodeGroup, build_fleet
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Checkpointing, Elastic, Job, JobKind, PodRequest, PodSet, ShareMode


@dataclass
class JobBuilder:
    _id: str
    _tenant: str = "t1"
    _gpus: int = 1
    _replicas: int = 1
    _cpus: float = 0.0
    _memory: float = 0.0
    _models: tuple[str, ...] = ()
    _submit: float = 0.0
    _run: float = 3600.0
    _estimate: float | None = None
    _priority: int = 0
    _kind: JobKind = JobKind.BATCH
    _checkpointing: Checkpointing | None = None
    _extra_sets: list[PodSet] = field(default_factory=list)
    _milli: int = 0
    _share: ShareMode | None = None
    _gpu_memory: float = 0.0
    _mig: str | None = None
    _elastic: Elastic | None = None

    def mig(self, profile: str) -> JobBuilder:
        """Each pod asks one MIG instance (e.g. "3g.40gb") instead of whole GPUs."""
        return replace(self, _mig=profile, _gpus=0)

    def share(self, milli: int, mode: str = "milli", memory_gb: float = 0.0) -> JobBuilder:
        """Each pod asks a soft share of one GPU: ``milli``/1000 of it, enforced by ``mode``."""
        return replace(self, _milli=milli, _share=ShareMode(mode), _gpu_memory=memory_gb, _gpus=0)

    def tenant(self, t: str) -> JobBuilder:
        return replace(self, _tenant=t)

    def gpus(self, n: int) -> JobBuilder:
        """GPUs per pod."""
        return replace(self, _gpus=n)

    def gang(self, replicas: int) -> JobBuilder:
        return replace(self, _replicas=replicas)

    def cpus(self, n: float) -> JobBuilder:
        return replace(self, _cpus=n)

    def memory(self, gb: float) -> JobBuilder:
        return replace(self, _memory=gb)

    def models(self, *names: str) -> JobBuilder:
        return replace(self, _models=names)

    def at(self, t: float) -> JobBuilder:
        return replace(self, _submit=t)

    def runs(self, seconds: float, estimate: float | None = None) -> JobBuilder:
        return replace(self, _run=seconds, _estimate=estimate)

    def priority(self, p: int) -> JobBuilder:
        return replace(self, _priority=p)

    def kind(self, k: JobKind) -> JobBuilder:
        return replace(self, _kind=k)

    def checkpoints(self, interval_s: float, cost_s: float = 0.0, restart_s: float = 0.0) -> JobBuilder:
        return replace(self, _checkpointing=Checkpointing(interval_s, cost_s, restart_s))

    def elastic(self, min_replicas: int, step: int = 1, serial_fraction: float = 0.0) -> JobBuilder:
        """The gang may shrink to ``min_replicas`` on a failure and grow back ``step`` pods at a time
        (``serial_fraction``: Amdahl's s for its speed at each size; 0: linear)."""
        return replace(self, _elastic=Elastic(min_replicas, step, serial_fraction))

    def build(self) -> Job:
        main = PodSet("worker", self._replicas,
                      PodRequest(self._gpus, self._cpus, self._memory, self._models, self._milli,
                                 self._share, self._gpu_memory, self._mig))
        return Job(JobId(self._id), TenantId(self._tenant), (main, *self._extra_sets), self._submit,
                   self._run, self._priority, self._kind, self._estimate, self._checkpointing,
                   elastic=self._elastic)


def job(job_id: str) -> JobBuilder:
    return JobBuilder(job_id)


@dataclass
class FleetBuilder:
    _groups: list[NodeGroup] = field(default_factory=list)
    _fabric: Fabric = field(default_factory=Fabric)

    def leaves(self, count: int, *, nodes: int, gpus: int = 8, gpu: str = "H100-80GB",
               cpus: int = 224, memory_gb: int = 2048, zone: str = "z0") -> FleetBuilder:
        g = NodeGroup(nodes=count * nodes, gpu=gpu, gpus_per_node=gpus, cpus=cpus,
                      memory_gb=memory_gb, leaf_size=nodes, prefix=f"g{len(self._groups)}", zone=zone)
        return replace(self, _groups=[*self._groups, g])

    def nvl72(self, racks: int = 1) -> FleetBuilder:
        g = NodeGroup(nodes=18 * racks, gpu="GB200", gpus_per_node=4, leaf_size=18,
                      nvlink_domain_nodes=18, prefix=f"g{len(self._groups)}")
        return replace(self, _groups=[*self._groups, g])

    def fabric(self, f: Fabric) -> FleetBuilder:
        return replace(self, _fabric=f)

    def build(self) -> Fleet:
        return build_fleet(self._groups, self._fabric)


def fleet() -> FleetBuilder:
    return FleetBuilder()
