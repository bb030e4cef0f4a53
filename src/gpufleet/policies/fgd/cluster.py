"""Columnar cluster state for the FGD experiment, and the pod request the packing policies see.

Nodes are rows in a fixed priority order (the experiment's seeded node permutation): row 0 wins every
score tie, which is how FGD's simulator breaks ties (lowest node name, names prefixed with a seeded
permutation index). GPUs are columns; a node with fewer GPUs than the widest node has its missing
GPUs at 0 free milli and beyond `ngpu`, so they never satisfy a request (every request is >= 1 milli).

The state also keeps F_n(M) for every node (FGD's fragmentation for the target workload), updated on
each placement for one row only, so policies and the recorder read it for free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from gpufleet.policies.fgd.measure import MILLI, FragTable

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
SHARE_CLASS = 0


class NodeColumns(Protocol):
    """What the state needs of a node list (openb's `NodeList` has these columns)."""

    names: tuple[str, ...]
    cpu_milli: IntArray
    memory_mib: IntArray
    gpus: IntArray
    model: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class PodRequest:
    """One pod as the policies see it. `allowed[t]` says whether model index t may host it."""

    cpu: int
    mem: int
    count: int
    milli: int
    allowed: BoolArray

    @property
    def is_share(self) -> bool:
        return self.count == 1 and self.milli < MILLI

    @property
    def is_multi_share(self) -> bool:
        """Several GPUs, each shared (k > 1 at r < 1000 milli): FGD fits them GPU by GPU."""
        return self.count > 1 and self.milli < MILLI

    @property
    def total_milli(self) -> int:
        return self.count * self.milli

    @property
    def affinity(self) -> int:
        """GpuClustering's pod class: 0 = share-gpu, k = k-gpu (whole GPUs); -1 = no GPU."""
        if self.count == 0:
            return -1
        return SHARE_CLASS if self.is_share else self.count


class ClusterState:
    """Mutable resources of all nodes; `apply` is the only mutation."""

    def __init__(self, nodes: NodeColumns, order: IntArray, models: tuple[str, ...],
                 table: FragTable) -> None:
        self.names = tuple(nodes.names[i] for i in order)
        self.models = models
        self.table = table
        model_of = {m: i for i, m in enumerate(models)}
        self.model_idx = np.array([model_of[nodes.model[i]] for i in order], dtype=np.int64)
        self.cpu_left = np.asarray(nodes.cpu_milli, dtype=np.int64)[order].copy()
        self.mem_left = np.asarray(nodes.memory_mib, dtype=np.int64)[order].copy()
        self.ngpu = np.asarray(nodes.gpus, dtype=np.int64)[order].copy()
        self.max_gpus = max(int(self.ngpu.max()), 1)
        cols = np.arange(self.max_gpus)
        self.gpu_exists = cols[None, :] < self.ngpu[:, None]
        self.gpu_free = np.where(self.gpu_exists, MILLI, 0).astype(np.int64)
        self.affinity = np.zeros((len(order), self.max_gpus + 1), dtype=np.int64)
        self.frag = table.frag(self.model_idx, self.cpu_left, self.gpu_free)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def gpu_left(self) -> IntArray:
        """Total free GPU milli per node."""
        return self.gpu_free.sum(axis=1)

    def feasible(self, pod: PodRequest) -> IntArray:
        """Rows that can host the pod now: model allowed, CPU, memory, and enough GPUs with room."""
        mask = (self.cpu_left >= pod.cpu) & (self.mem_left >= pod.mem)
        if pod.count > 0:
            mask &= pod.allowed[self.model_idx]
            mask &= (self.gpu_free >= pod.milli).sum(axis=1) >= pod.count
        return np.flatnonzero(mask)

    def apply(self, node: int, gpus: IntArray, pod: PodRequest) -> None:
        """Bind the pod to `node`, taking `pod.milli` from each GPU in `gpus`; refresh F_node(M)."""
        self.cpu_left[node] -= pod.cpu
        self.mem_left[node] -= pod.mem
        if pod.count:
            self.gpu_free[node, gpus] -= pod.milli
            self.affinity[node, pod.affinity] += 1
        sl = slice(node, node + 1)
        self.frag[node] = self.table.frag(self.model_idx[sl], self.cpu_left[sl], self.gpu_free[sl])[0]


def first_fitting_gpus(state: ClusterState, node: int, pod: PodRequest) -> IntArray:
    """The first `count` GPUs (by index) with room for the pod; FGD's whole-GPU assignment. A
    multi-GPU share takes the GPUs FGD's ``NodeResource.Sub`` takes: those with room, ascending by
    free milli, lowest index on ties (for whole GPUs all candidates are at 1000: index order)."""
    free = state.gpu_free[node]
    if pod.is_multi_share:
        room = np.where(free >= pod.milli, free, MILLI + 1)
        return np.sort(np.argsort(room, kind="stable")[: pod.count]).astype(np.int64)
    return np.flatnonzero(free >= pod.milli)[: pod.count]


def best_fit_gpus(state: ClusterState, node: int, pod: PodRequest) -> IntArray:
    """Sharing pods: the GPU with the least free milli that still fits (lowest index on ties);
    whole-GPU pods: the first `count` fully free GPUs."""
    if not pod.is_share:
        return first_fitting_gpus(state, node, pod)
    free = state.gpu_free[node]
    room = np.where(free >= pod.milli, free, MILLI + 1)
    return np.array([int(np.argmin(room))], dtype=np.int64)
