"""A gpufleet Job as an sbatch request: pure mapping, no I/O.

A job's pods become Slurm tasks: by default one pod per node (``--nodes=R --ntasks-per-node=1
--gres=gpu:G``), the usual shape of a training gang. When the node size is known and pods are
smaller than a node, pods are packed ``k`` to a node, with ``k`` the largest divisor of the
replica count that fits, so the gang keeps its exact GPU count per node. Pod sets with equal
requests are one set; sets that differ only in GPUs (an uneven split read from sacct) become
``--nodes=N --gpus=TOTAL``; other mixes would need a heterogeneous job and are refused.

Time: ``--time`` is the job's estimate rounded up to whole minutes (Slurm's unit), at least 1.
Topology: ``topology_required``/``topology_preferred`` of ``leaf`` ask for one leaf switch
(``--switches=1``), ``node``/``nvlink`` put every pod on one node; the ``slurm.switches`` label is
passed as ``--switches`` verbatim (``1@10:00``). ``spine`` has no 22.05 equivalent and is dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpufleet.adapters.slurm.fleet_conf import slurm_gpu_type
from gpufleet.model.job import Job, PodRequest

LABEL_SWITCHES = "slurm.switches"
LABEL_TOPOLOGY = "topology"
LABEL_QOS = "slurm.qos"
LABEL_PARTITION = "slurm.partition"


class MappingError(ValueError):
    """A job that has no faithful sbatch form; the message says why."""


@dataclass(frozen=True, slots=True)
class SbatchRequest:
    job_name: str
    nodes: int
    time_minutes: int
    ntasks_per_node: int | None = 1
    gpus_per_node: int = 0
    gpus_total: int | None = None
    gpu_type: str | None = None
    constraint: str | None = None
    cpus_per_task: int | None = None
    mem_per_node_mb: int | None = None
    account: str | None = None
    qos: str | None = None
    partition: str | None = None
    switches: str | None = None

    def options(self) -> list[str]:
        """sbatch options, in a fixed order (stable for tests and logs)."""
        opts = [f"--job-name={self.job_name}", f"--nodes={self.nodes}"]
        if self.ntasks_per_node is not None:
            opts.append(f"--ntasks-per-node={self.ntasks_per_node}")
        typed = f"{self.gpu_type}:" if self.gpu_type else ""
        if self.gpus_total is not None:
            opts.append(f"--gpus={typed}{self.gpus_total}")
        elif self.gpus_per_node:
            opts.append(f"--gres=gpu:{typed}{self.gpus_per_node}")
        if self.constraint:
            opts.append(f"--constraint={self.constraint}")
        if self.cpus_per_task:
            opts.append(f"--cpus-per-task={self.cpus_per_task}")
        if self.mem_per_node_mb:
            opts.append(f"--mem={self.mem_per_node_mb}M")
        if self.switches:
            opts.append(f"--switches={self.switches}")
        opts.append(f"--time={self.time_minutes}")
        for flag, value in (("account", self.account), ("qos", self.qos), ("partition", self.partition)):
            if value:
                opts.append(f"--{flag}={value}")
        return opts


def time_minutes(seconds: float) -> int:
    """Slurm time limits are whole minutes: round up, never below one."""
    return max(1, math.ceil(seconds / 60 - 1e-9))


def _pack(replicas: int, gpus: int, gpus_per_node: int | None) -> int:
    if not gpus_per_node or gpus <= 0 or gpus >= gpus_per_node:
        return 1
    return max(k for k in range(1, replicas + 1) if replicas % k == 0 and k * gpus <= gpus_per_node)


def _gpu_selection(request: PodRequest, slurm_types: dict[str, str]) -> tuple[str | None, str | None]:
    """(GRES type, constraint) for the allowed models: one model is a type, several a feature OR."""
    names = [slurm_types.get(m) or slurm_gpu_type(m) for m in request.gpu_models]
    if len(names) == 1:
        return names[0], None
    if len(names) > 1:
        return None, "|".join(names)
    return None, None


REQUIRED_SWITCH_WAIT = "7-00:00:00"
SAME_NODE = ("node", "nvlink")


def _switches(job: Job) -> str | None:
    """``--switches``: a required leaf waits as long as Slurm allows, a preferred one Slurm's default.

    Slurm caps the wait at ``SchedulerParameters=max_switch_wait`` (300 s by default), after
    which it places the job anyway: a hard requirement needs that parameter raised on the cluster.
    """
    labels = dict(job.labels)
    if labels.get(LABEL_SWITCHES):
        return labels[LABEL_SWITCHES]
    if job.topology_required == "leaf":
        return f"1@{REQUIRED_SWITCH_WAIT}"
    if job.topology_preferred == "leaf" or labels.get(LABEL_TOPOLOGY) == "leaf":
        return "1"
    return None


def _same_node(job: Job) -> bool:
    return job.topology_required in SAME_NODE or job.topology_preferred in SAME_NODE


def to_sbatch(job: Job, *, gpus_per_node: int | None = None, account: bool = True,
              slurm_types: dict[str, str] | None = None, partition: str | None = None) -> SbatchRequest:
    """The sbatch request for ``job``; ``slurm_types`` maps catalog models to the cluster's GRES types."""
    if not job.pod_sets:
        raise MappingError(f"job {job.id}: has no pod sets")
    first = job.pod_sets[0].request
    base = (first.cpus, first.memory_gb, first.gpu_models)
    if any((ps.request.cpus, ps.request.memory_gb, ps.request.gpu_models) != base for ps in job.pod_sets):
        raise MappingError(f"job {job.id}: pod sets ask for different CPUs, memory or GPU models; "
                           "that needs a Slurm heterogeneous job, which is not supported")
    replicas = sum(ps.replicas for ps in job.pod_sets)
    gpu_counts = {ps.request.gpus for ps in job.pod_sets}
    gpu_type, constraint = _gpu_selection(first, slurm_types or {})
    labels = dict(job.labels)
    common = SbatchRequest(
        job_name=str(job.id), nodes=replicas, time_minutes=time_minutes(job.estimate), gpu_type=gpu_type,
        constraint=constraint, cpus_per_task=math.ceil(first.cpus) if first.cpus > 0 else None,
        account=str(job.tenant) if account else None, qos=labels.get(LABEL_QOS) or None,
        partition=partition or labels.get(LABEL_PARTITION) or None, switches=_switches(job),
    )
    if len(gpu_counts) > 1:
        mem = math.ceil(first.memory_gb * 1024) if first.memory_gb > 0 else None
        return replace(common, gpus_total=job.total_gpus, mem_per_node_mb=mem)
    gpus = gpu_counts.pop()
    per_node = replicas if _same_node(job) else _pack(replicas, gpus, gpus_per_node)
    if job.topology_required in SAME_NODE and gpus_per_node and replicas * gpus > gpus_per_node:
        raise MappingError(f"job {job.id}: must stay within one {job.topology_required} but needs "
                           f"{replicas * gpus} GPUs on {gpus_per_node}-GPU nodes (a multi-node NVLink "
                           "domain needs topology/block and --segment, Slurm 23.11+)")
    mem = math.ceil(first.memory_gb * 1024 * per_node) if first.memory_gb > 0 else None
    return replace(common, nodes=replicas // per_node, ntasks_per_node=per_node,
                   gpus_per_node=gpus * per_node, mem_per_node_mb=mem)
