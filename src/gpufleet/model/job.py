"""Jobs: gangs of pod sets with a per-pod request.

A job is all-or-nothing: it runs only when every replica of every pod set is bound. Room is kept
for what later layers add (fractions, topology, parallelism, checkpoints): each is an optional
field with a neutral default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.parallelism import Parallelism, TrainingProfile


class JobKind(StrEnum):
    TRAINING = "training"
    BATCH = "batch"
    INFERENCE = "inference"
    NOTEBOOK = "notebook"


@dataclass(frozen=True, slots=True)
class PodRequest:
    """What one pod asks of one node. ``gpu_models`` empty means any model."""

    gpus: int = 1
    cpus: float = 0.0
    memory_gb: float = 0.0
    gpu_models: tuple[str, ...] = ()

    @property
    def shape(self) -> tuple[int, float, float, tuple[str, ...]]:
        return (self.gpus, self.cpus, self.memory_gb, self.gpu_models)


@dataclass(frozen=True, slots=True)
class PodSet:
    name: str
    replicas: int
    request: PodRequest


@dataclass(frozen=True, slots=True)
class Checkpointing:
    """Checkpoint policy: a checkpoint every ``interval_s`` of progress, each costing ``cost_s``."""

    interval_s: float
    cost_s: float = 0.0
    restart_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Job:
    id: JobId
    tenant: TenantId
    pod_sets: tuple[PodSet, ...]
    submit_time: float
    run_time: float
    priority: int = 0
    kind: JobKind = JobKind.BATCH
    run_time_estimate: float | None = None
    checkpointing: Checkpointing | None = None
    labels: tuple[tuple[str, str], ...] = field(default=())
    #: Training jobs: TP/PP/DP sizes and the model whose traffic the placement must serve.
    parallelism: Parallelism | None = None
    training: TrainingProfile | None = None
    #: Topology constraint: level the whole gang must stay within / should stay within
    #: ("nvlink", "node", "leaf", "spine"), as Kueue's required/preferred topology.
    topology_required: str | None = None
    topology_preferred: str | None = None

    @property
    def total_gpus(self) -> int:
        return sum(ps.replicas * ps.request.gpus for ps in self.pod_sets)

    @property
    def total_pods(self) -> int:
        return sum(ps.replicas for ps in self.pod_sets)

    @property
    def estimate(self) -> float:
        """The run time the scheduler may plan with: the user's estimate, else the true run time."""
        return self.run_time_estimate if self.run_time_estimate is not None else self.run_time

    @property
    def shape_key(self) -> tuple:
        """Jobs with equal keys are interchangeable for feasibility (an equivalence class)."""
        return tuple((ps.replicas, ps.request.shape) for ps in self.pod_sets)
