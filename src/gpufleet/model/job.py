"""Jobs: gangs of pod sets with a per-pod request.

A job is all-or-nothing: it runs only when every replica of every pod set is bound. Room is kept
for what later layers add (fractions, topology, parallelism, checkpoints): each is an optional
field with a neutral default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.mig import COMPUTE_SLICES, profile_name
from gpufleet.model.parallelism import Parallelism, TrainingProfile
from gpufleet.model.shape_key import ShapeKey


class JobKind(StrEnum):
    TRAINING = "training"
    BATCH = "batch"
    INFERENCE = "inference"
    NOTEBOOK = "notebook"


class ShareMode(StrEnum):
    """How a soft (non-MIG) share of one GPU is enforced; one mode per GPU at a time.

    ``timeslice``: a replica of a time-sliced GPU (no memory, compute or fault isolation);
    ``mps``: an MPS client with a thread percentage and a pinned-memory limit (no fault
    isolation); ``milli``: a milli-GPU share as in the Alibaba trace (no isolation).
    """

    TIMESLICE = "timeslice"
    MPS = "mps"
    MILLI = "milli"


@dataclass(frozen=True, slots=True)
class PodRequest:
    """What one pod asks of one node. ``gpu_models`` empty means any model.

    Three kinds of GPU request, all with neutral defaults so whole-GPU code is unchanged:
    whole GPUs (``gpus`` ≥ 1); a MIG instance (``gpus`` = 0, ``mig_profile`` e.g. "3g.40gb"); a
    soft share of ONE GPU (``gpus`` = 0, ``gpu_milli`` in 1..1000 thousandths of a GPU's compute
    — a time-slice replica of 1/N is 1000 // N, an MPS thread percentage p is 10 p — with
    ``share`` saying how it is enforced and optional ``gpu_memory_gb`` of that GPU's memory).
    """

    gpus: int = 1
    cpus: float = 0.0
    memory_gb: float = 0.0
    gpu_models: tuple[str, ...] = ()
    gpu_milli: int = 0
    share: ShareMode | None = None
    gpu_memory_gb: float = 0.0
    mig_profile: str | None = None

    @property
    def is_fractional(self) -> bool:
        """A MIG instance or a soft share: placed on one GPU index, not counted in whole GPUs."""
        return self.mig_profile is not None or self.gpu_milli > 0

    @property
    def shape(self) -> tuple:
        base = (self.gpus, self.cpus, self.memory_gb, self.gpu_models)
        if not self.is_fractional:
            return base
        return (*base, self.share, self.gpu_milli, self.gpu_memory_gb, self.mig_profile)

    @property
    def gpu_equivalent(self) -> float:
        """GPUs this pod occupies, fractions included: whole GPUs, milli / 1000, or a MIG
        instance's compute slices / 7 (a 3g is 3/7 of a GPU)."""
        if self.mig_profile is not None:
            return int(profile_name(self.mig_profile)[0]) / COMPUTE_SLICES
        return self.gpus + self.gpu_milli / 1000.0


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
class Elastic:
    """An elastic pod set (TorchElastic's ``--nnodes=MIN:MAX``): the job's first pod set may run
    with any replica count from ``min_replicas`` up to its ``replicas`` (the max) in multiples of
    ``step`` (the pods of one data-parallel replica: TP × PP ranks). On a failure it shrinks and
    keeps running; it grows back a step at a time, each step placed all-or-nothing (a gang delta).
    Throughput scales with the replica count (data parallelism: samples per step ∝ DP width), or,
    with ``serial_fraction`` s > 0, by Amdahl's law (G. Amdahl, "Validity of the single processor
    approach to achieving large scale computing capabilities", AFIPS 1967): speed(n) =
    1 / (s + (1 − s)/n) — s the share of a step that does not shrink with more replicas (the
    gradient all-reduce, the optimizer step). 0 (default): linear."""

    min_replicas: int
    step: int = 1
    serial_fraction: float = 0.0


#: Interned shape keys: equal keys are one object, so 100,000 queued jobs share a few hundred key
#: tuples (memory), and the queue's class lookup (engine/queue.py) compares a key with its class
#: by identity before any element-wise comparison. A queue has hundreds of
#: shapes, but a long-running service that gives jobs their own node filters (``eligible_nodes``:
#: one key per filter) would keep every key it ever saw, so the table is bounded: two generations
#: of at most ``SHAPE_INTERN_LIMIT // 2`` keys each. New keys go into the young one; when it is
#: full it becomes the old one and the previous old one is dropped; a key found in the old one
#: moves back into the young one. So a shape in use stays interned, at most
#: ``SHAPE_INTERN_LIMIT`` keys are held, and a hit costs one dict lookup, as an unbounded table's
#: did (a least-recently-used list would reorder on every hit). Dropping a key is safe: a job
#: keeps its own key object, and the queue groups jobs by key equality, not identity; only the
#: sharing is lost for that shape.
SHAPE_INTERN_LIMIT = 16_384
_SHAPES: dict[ShapeKey, ShapeKey] = {}
_OLDER: dict[ShapeKey, ShapeKey] = {}


def intern_shape(key: ShapeKey) -> ShapeKey:
    """The one object for keys equal to ``key`` (``key`` itself the first time it is seen, or
    the first time since it was dropped)."""
    global _SHAPES, _OLDER
    known = _SHAPES.get(key)
    if known is not None:
        return known
    known = _OLDER.get(key, key)
    _SHAPES[key] = known
    if len(_SHAPES) >= SHAPE_INTERN_LIMIT // 2:
        _OLDER, _SHAPES = _SHAPES, {}
    return known


def interned_shapes() -> int:
    """How many distinct shape keys the intern table holds now (at most ``SHAPE_INTERN_LIMIT``)."""
    return len(_SHAPES.keys() | _OLDER.keys())


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
    #: The nodes (by name) this job's pods may go to; None: every node. A per-job node filter
    #: (Kubernetes taints and tolerations, node selectors and affinity, DRA device classes; a
    #: Slurm partition's node list) that every placer applies through its shared filter part and
    #: that reservation and backfill honour because they ask the placer.
    eligible_nodes: frozenset[str] | None = None
    #: Elastic size range of the first pod set (fleet_events/elastic.py); None: a rigid gang.
    elastic: Elastic | None = None
    _shape: ShapeKey = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.elastic is not None:
            k, e = self.pod_sets[0].replicas, self.elastic
            if not 0.0 <= e.serial_fraction < 1.0:
                raise ValueError(f"job {self.id}: elastic serial_fraction must be in [0, 1), got "
                                 f"{e.serial_fraction}")
            if e.step < 1 or not 1 <= e.min_replicas <= k or (k - e.min_replicas) % e.step:
                raise ValueError(f"job {self.id}: elastic range needs 1 ≤ min_replicas ({e.min_replicas}) "
                                 f"≤ replicas ({k}) with replicas − min_replicas a multiple of "
                                 f"step ({e.step})")
        key = self._compute_shape_key()
        object.__setattr__(self, "_shape", intern_shape(key))

    @property
    def total_gpus(self) -> int:
        return sum(ps.replicas * ps.request.gpus for ps in self.pod_sets)

    @property
    def total_gpu_equivalents(self) -> float:
        """GPUs the job occupies with fractions counted (``PodRequest.gpu_equivalent``)."""
        return sum(ps.replicas * ps.request.gpu_equivalent for ps in self.pod_sets)

    @property
    def total_pods(self) -> int:
        return sum(ps.replicas for ps in self.pod_sets)

    @property
    def estimate(self) -> float:
        """The run time the scheduler may plan with: the user's estimate, else the true run time."""
        return self.run_time_estimate if self.run_time_estimate is not None else self.run_time

    @property
    def shape_key(self) -> ShapeKey:
        """Jobs with equal keys are interchangeable for feasibility (an equivalence class).

        Computed once, at construction: a 100,000-job queue asks for it every cycle."""
        return self._shape

    def _compute_shape_key(self) -> ShapeKey:
        """Per pod set (replicas, request shape); a soft GPU share's also names the tenant (the
        tenant rule makes feasibility depend on who asks). Topology constraints, parallelism and
        the node filter (``eligible_nodes``: the set itself, whose hash a frozenset caches) are
        part of the key when present, compared exactly (model/shape_key.py)."""
        pods = tuple((ps.replicas, ps.request.shape + ((self.tenant,) if ps.request.gpu_milli else ()))
                     for ps in self.pod_sets)
        constraints = None
        if (self.topology_required or self.topology_preferred or self.parallelism is not None
                or self.training is not None):
            constraints = (self.topology_required, self.topology_preferred, self.parallelism, self.training)
        return ShapeKey(pods, constraints, self.eligible_nodes)
