"""A Plan: tentative bindings on a private copy of the node table, with checkpoint and rollback.

Search (gang placement, preemption, defragmentation) binds pods, measures, and undoes. Nothing
leaves the engine until ``commit()`` turns the surviving journal into immutable decisions.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.engine.gpu_state import GpuSlot
from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.ids import JobId
from gpufleet.model.job import PodRequest


@dataclass(frozen=True, slots=True)
class PodBinding:
    job: JobId
    pod_set: str
    replica: int
    node: int
    request: PodRequest
    #: Fractional pods (MIG instance, soft share): which GPU (and MIG start) on ``node``.
    slot: GpuSlot | None = None


class Plan:
    def __init__(self, table: NodeTable) -> None:
        self.table = table.copy()
        self._journal: list[PodBinding] = []
        self._released: list[tuple[int, PodRequest, GpuSlot | None]] = []

    def bind(self, binding: PodBinding) -> None:
        self.table.take(binding.node, binding.request, slot=binding.slot)
        self._journal.append(binding)

    def release(self, node: int, req: PodRequest, slot: GpuSlot | None = None) -> None:
        """Free capacity on the snapshot only (a what-if for preemption search). A fractional
        pod's GPU share is freed only with its ``slot`` (``release_binding`` passes it)."""
        self.table.give(node, req, slot=slot)
        self._released.append((node, req, slot))

    def release_binding(self, b: PodBinding) -> None:
        self.release(b.node, b.request, b.slot)

    def checkpoint(self) -> tuple[int, int]:
        return len(self._journal), len(self._released)

    def rollback(self, mark: tuple[int, int]) -> None:
        bound, released = mark
        while len(self._journal) > bound:
            b = self._journal.pop()
            self.table.give(b.node, b.request, slot=b.slot)
        while len(self._released) > released:
            node, req, slot = self._released.pop()
            self.table.take(node, req, slot=slot)

    def commit(self) -> tuple[PodBinding, ...]:
        return tuple(self._journal)
