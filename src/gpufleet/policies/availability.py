"""Free capacity over time: now, and after the running jobs end by their estimates.

Running jobs are ranked by expected end (ties by job id). Their pods' resources are laid out in
that order, so "free capacity once the first k jobs have ended" is the free capacity now plus one
``bincount`` over a prefix of the release arrays: O(pods), no Python loop over nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import RunningJob


@dataclass(frozen=True)
class Availability:
    """Per-cycle: built once in reserve, read by reserve and backfill, then dropped."""

    table: NodeTable            # free capacity now (after this cycle's placements)
    ends: np.ndarray            # expected end of the k-th job to end, ascending
    rel_rank: np.ndarray        # per released pod: rank of its job, ascending
    rel_node: np.ndarray
    rel_gpu: np.ndarray
    rel_cpu: np.ndarray
    rel_mem: np.ndarray
    _memo: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)

    @classmethod
    def build(cls, table: NodeTable, running: Sequence[RunningJob],
              expected_end: Callable[[RunningJob], float]) -> Availability:
        keyed = sorted(((expected_end(rj), rj.job.id, rj) for rj in running), key=lambda x: x[:2])
        ranked = [rj for _, _, rj in keyed]
        ends = np.array([e for e, _, _ in keyed], float)
        rank, node, gpu, cpu, mem = [], [], [], [], []
        for k, rj in enumerate(ranked):
            for b in rj.bindings:
                rank.append(k)
                node.append(b.node)
                gpu.append(b.request.gpus)
                cpu.append(b.request.cpus)
                mem.append(b.request.memory_gb)
        return cls(table, ends, np.array(rank, np.int64), np.array(node, np.int64),
                   np.array(gpu, np.int64), np.array(cpu, float), np.array(mem, float))

    def __len__(self) -> int:
        return int(self.ends.size)

    def start_of(self, k: int, now: float) -> float:
        """The time at which the first ``k`` jobs have ended (``now`` for k = 0)."""
        return now if k == 0 else float(self.ends[k - 1])

    def index_at(self, t: float) -> int:
        """How many jobs have ended by time ``t``."""
        return int(np.searchsorted(self.ends, t, side="right"))

    def free_after(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Free capacity once the first ``k`` jobs have ended (arrays owned by the caller)."""
        hit = self._memo.get(k)
        if hit is None:
            hit = self._memo[k] = self._free_after(k)
        return hit[0].copy(), hit[1].copy(), hit[2].copy()

    def _free_after(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p = int(np.searchsorted(self.rel_rank, k, side="left"))
        n = len(self.table)
        t = self.table
        if p == 0:
            return t.gpu_free.copy(), t.cpu_free.copy(), t.mem_free.copy()
        idx = self.rel_node[:p]
        return (t.gpu_free + np.bincount(idx, self.rel_gpu[:p], n).astype(np.int64),
                t.cpu_free + np.bincount(idx, self.rel_cpu[:p], n),
                t.mem_free + np.bincount(idx, self.rel_mem[:p], n))


@dataclass
class Hold:
    """Resources per node that a reservation holds from ``start`` for ``duration``."""

    start: float
    end: float
    gpu: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray

    @classmethod
    def of(cls, bindings: Sequence[PodBinding], n: int, start: float, end: float) -> Hold:
        node = np.array([b.node for b in bindings], np.int64)
        return cls(start, end,
                   np.bincount(node, np.array([b.request.gpus for b in bindings], float), n).astype(np.int64),
                   np.bincount(node, np.array([b.request.cpus for b in bindings], float), n),
                   np.bincount(node, np.array([b.request.memory_gb for b in bindings], float), n))

    def overlaps(self, start: float, end: float) -> bool:
        return self.start < end and start < self.end
