"""The five baseline packing policies of FGD's evaluation, as their authors' simulator scores them.

Each policy scores every feasible node (all vectorised over the candidate rows), the maximum wins and
ties go to the first row (the seeded node-priority order): the shared pick ``scorers.first_best``.
Integer arithmetic follows Kubernetes score plugins (int64, truncation) because the truncation
creates the ties that decide placements.
Normalising constants: MaxSpecCpu = 128,000 milli, MaxSpecGpu = 8,000 milli (one 8-GPU node).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from gpufleet.policies.fgd.cluster import ClusterState, PodRequest, best_fit_gpus
from gpufleet.policies.fgd.measure import MILLI
from gpufleet.policies.scorers import first_best

IntArray = npt.NDArray[np.int64]
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8_000
MAX_SCORE = 100


class PackingPolicy(Protocol):
    """Choose a node row among `cand` (feasible rows, ascending) and the GPUs to use on it."""

    name: str

    def choose(self, state: ClusterState, pod: PodRequest, cand: IntArray,
               rng: np.random.Generator) -> tuple[int, IntArray]: ...


class RandomPolicy:
    """01-Random: a feasible node uniformly at random, then a random GPU that fits."""

    name = "random"

    def choose(self, state: ClusterState, pod: PodRequest, cand: IntArray,
               rng: np.random.Generator) -> tuple[int, IntArray]:
        node = int(cand[rng.integers(len(cand))])
        fitting = np.flatnonzero(state.gpu_free[node] >= pod.milli) if pod.count else np.empty(0, np.int64)
        if pod.is_share:
            return node, fitting[rng.integers(len(fitting))][None]
        return node, fitting[: pod.count]


class DotProdPolicy:
    """02-DotProd (Tetris): score = int(100 (1 - (c_left c + g_left g) / 2)) with each dimension
    divided by its max spec, where c is CPU milli and g total GPU milli (per-GPU milli x count).
    A large product means the node has much of what the pod asks for, so fuller nodes win."""

    name = "dotprod"

    def choose(self, state: ClusterState, pod: PodRequest, cand: IntArray,
               rng: np.random.Generator) -> tuple[int, IntArray]:
        dot = (state.cpu_left[cand] / MAX_SPEC_CPU) * (pod.cpu / MAX_SPEC_CPU)
        dot = dot + (state.gpu_left[cand] / MAX_SPEC_GPU) * (pod.total_milli / MAX_SPEC_GPU)
        scores = (MAX_SCORE * (1.0 - dot / 2.0)).astype(np.int64)
        node = first_best(cand, scores)
        return node, best_fit_gpus(state, node, pod)


class GpuClusteringPolicy:
    """03-GpuClustering: keep pods of one class (share-gpu, 1-gpu, 2-gpu, ...) together.

    Bands: 75 if the node hosts only this class, 50 if this class among others, 25 if the node hosts
    no GPU pod, 0 if only other classes; plus a packing tilt 25 (8000 - g_left) // 8000.
    CPU-only pods score 0 everywhere (so the first feasible node in priority order)."""

    name = "gpuclustering"

    def choose(self, state: ClusterState, pod: PodRequest, cand: IntArray,
               rng: np.random.Generator) -> tuple[int, IntArray]:
        if pod.count == 0:
            return int(cand[0]), np.empty(0, np.int64)
        aff = state.affinity[cand]
        classes = (aff > 0).sum(axis=1)
        mine = aff[:, pod.affinity] > 0
        band = np.where(mine, np.where(classes == 1, 75, 50), np.where(classes == 0, 25, 0))
        tilt = (MAX_SCORE // 4) * (MAX_SPEC_GPU - state.gpu_left[cand]) // MAX_SPEC_GPU
        node = first_best(cand, band + tilt)
        return node, best_fit_gpus(state, node, pod)


class GpuPackingPolicy:
    """04-GpuPacking, from high to low score:
    1. the pod fits on partly used GPUs: 100 - (sum of free% of the GPUs used) // 10, floor 50;
    2. it needs fully free GPUs on a used node: 50 - #free GPUs used, floor 33;
    3. the node is empty: 33 - #GPUs (never below #GPUs).
    GPUs are taken in ascending free order, so a sharing pod looks at its best-fit GPU.
    CPU-only pods score 0 everywhere."""

    name = "gpupacking"

    def choose(self, state: ClusterState, pod: PodRequest, cand: IntArray,
               rng: np.random.Generator) -> tuple[int, IntArray]:
        if pod.count == 0:
            return int(cand[0]), np.empty(0, np.int64)
        free = state.gpu_free[cand]
        ngpu = state.ngpu[cand]
        fully = ((free == MILLI) & state.gpu_exists[cand]).sum(axis=1)
        empty_score = np.maximum(MAX_SCORE // 3 - fully, fully)
        if pod.is_share:
            best = np.where(free >= pod.milli, free, MILLI + 1).min(axis=1)
            shared = np.maximum(MAX_SCORE - (best * 100 // MILLI) // 10, MAX_SCORE // 2)
            used = np.where(best == MILLI, MAX_SCORE // 2 - 1, shared)
        else:
            used = np.full(len(cand), max(MAX_SCORE // 2 - pod.count, MAX_SCORE // 3))
        scores = np.where(fully == ngpu, empty_score, used)
        node = first_best(cand, scores)
        return node, best_fit_gpus(state, node, pod)


class BestFitPolicy:
    """05-BestFit: raw = int(100 (1 - sum_i 0.5 (free_i - req_i) / maxspec_i)) over (CPU, GPU), then
    min-max normalised to 0..100 with integer division over the feasible nodes (all 0 if equal)."""

    name = "bestfit"

    def choose(self, state: ClusterState, pod: PodRequest, cand: IntArray,
               rng: np.random.Generator) -> tuple[int, IntArray]:
        slack = 0.5 * (state.cpu_left[cand] - pod.cpu) / MAX_SPEC_CPU
        slack = slack + 0.5 * (state.gpu_left[cand] - pod.total_milli) / MAX_SPEC_GPU
        raw = ((1.0 - slack) * MAX_SCORE).astype(np.int64)
        lo, hi = raw.min(), raw.max()
        scores = (raw - lo) * MAX_SCORE // (hi - lo) if hi > lo else np.zeros_like(raw)
        node = first_best(cand, scores)
        return node, best_fit_gpus(state, node, pod)
