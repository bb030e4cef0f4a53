"""Fragmentation measures over the node table, sampled through a simulation, and the defrag ledger.

Free capacity, in GPU-equivalents, of node n:
    free_n = idle GPUs (gpu_free) + Σ over softly shared GPUs of free milli / 1000
             + Σ over MIG GPUs of free memory slices / 8.

Fragmentation ratio (after FGD, Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing
Workloads with Fragmentation Gradient Descent", USENIX ATC 2023, §3: a node's fragment is the free
GPU capacity a task drawn from the target workload cannot use). The target workload M is the
pod shapes the scenario submits, weighted by pod count (``workload_shapes``). For a shape m of
size s_m GPU-equivalents, the capacity m could use on node n is min(free_n, slots_n(m) × s_m);
    fragmentation ratio = Σ_m p_m × Σ_n (free_n − usable_n(m)) / Σ_n free_n   ∈ [0, 1]
0: every free GPU is usable by the typical pod; 1: none is. (FGD reports the absolute sum; the
ratio makes fleets of different size and load comparable.) Soft shares count tenant-blind here.

Schedulability by shape: how many more single-pod jobs of 1, 2, 4 and 8 whole GPUs could start
now — Σ_n ⌊gpu_free_n / g⌋ over schedulable nodes; the "allocated is not usable" view of a fleet.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.job import Job, PodRequest
from gpufleet.model.mig import MEMORY_SLICES

SHAPE_SIZES = (1, 2, 4, 8)
MAX_SHAPES = 16


def free_gpu_equivalents(table: NodeTable) -> np.ndarray:
    """Per node free capacity in GPU-equivalents (module docstring)."""
    free = np.where(table.schedulable, table.gpu_free, 0).astype(np.float64)
    pg = table.per_gpu
    if pg is None:
        return free
    soft = pg.valid & (pg.milli_free < 1000)
    mig = pg.valid & (pg.mig_mask != 0)
    if not soft.any() and not mig.any():
        return free  # no GPU is shared or sliced: the parts below are all zero
    used_slices = np.unpackbits(pg.mig_mask.astype(np.uint8)[..., None], axis=-1).sum(axis=-1)
    part = (np.where(soft, pg.milli_free / 1000.0, 0.0).sum(axis=1)
            + np.where(mig, (MEMORY_SLICES - used_slices) / MEMORY_SLICES, 0.0).sum(axis=1))
    return free + np.where(table.schedulable, part, 0.0)


def workload_shapes(jobs: Sequence[Job], limit: int = MAX_SHAPES) -> list[tuple[PodRequest, float]]:
    """The target workload: distinct pod requests weighted by pod count (the ``limit`` most
    common, weights renormalised), ties broken by the request's shape for determinism."""
    counts: Counter[PodRequest] = Counter()
    for j in jobs:
        for ps in j.pod_sets:
            counts[ps.request] += ps.replicas
    top = sorted(counts.items(), key=lambda kv: (-kv[1], repr(kv[0].shape)))[:limit]
    total = sum(c for _, c in top)
    return [(r, c / total) for r, c in top] if total else []


def fragmentation_ratio(table: NodeTable, shapes: Sequence[tuple[PodRequest, float]]) -> float:
    free = free_gpu_equivalents(table)
    total = float(free.sum())
    if total <= 1e-9 or not shapes:
        return 0.0
    frag = 0.0
    for req, weight in shapes:
        usable = np.minimum(free, table.slots(req) * req.gpu_equivalent)
        frag += weight * float((free - usable).sum())
    return frag / total


def schedulable_by_shape(table: NodeTable, sizes: Sequence[int] = SHAPE_SIZES) -> dict[int, int]:
    return {g: int(table.slots(PodRequest(g)).sum()) for g in sizes}


@dataclass(frozen=True, slots=True)
class Move:
    """One defrag eviction notice: ``job`` moved for ``for_job`` at ``t``."""

    t: float
    job: str
    for_job: str
    gpu_equivalents: float


@dataclass(slots=True)
class FragmentationSamples:
    """What the runner records for fragmentation: sampled measures and the moves ledger."""

    shapes: list[tuple[PodRequest, float]]
    t: list[float] = field(default_factory=list)
    ratio: list[float] = field(default_factory=list)
    schedulable: dict[int, list[int]] = field(default_factory=lambda: {g: [] for g in SHAPE_SIZES})
    moves: list[Move] = field(default_factory=list)
    #: GPU-equivalent-seconds of work lost and restarts paid by evictions (fractions counted).
    lost_gpu_equiv_s: float = 0.0
    reconfigurations: int = 0

    @classmethod
    def for_workload(cls, jobs: Sequence[Job]) -> FragmentationSamples:
        return cls(workload_shapes(jobs))

    def sample(self, t: float, table: NodeTable) -> None:
        self.t.append(t)
        self.ratio.append(fragmentation_ratio(table, self.shapes))
        for g, n in schedulable_by_shape(table).items():
            self.schedulable[g].append(n)
        if table.per_gpu is not None:
            self.reconfigurations = table.per_gpu.reconfigurations

    def moved(self, t: float, job: Job, for_job: str) -> None:
        self.moves.append(Move(t, job.id, for_job, job.total_gpu_equivalents))

    def evicted(self, job: Job, lost_s: float, restart_s: float) -> None:
        self.lost_gpu_equiv_s += job.total_gpu_equivalents * (lost_s + restart_s)
