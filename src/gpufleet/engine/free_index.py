"""An incremental index of free capacity: schedulable nodes counted by (GPU model, free GPUs).

``hist[m, v]`` = nodes of model m with exactly v whole GPUs free. Binding or releasing a pod moves
one node between two buckets (O(1)), so the index is always current. It answers "at most how
many pods of g GPUs could this fleet take now?" as Σ_v hist[m, v] × ⌊v / g⌋ over the allowed
models — O(models × GPUs per node), independent of the number of nodes. A gang asking for more
than that bound is rejected without touching the node arrays; in a busy fleet with a deep queue
that is most fit searches.
"""

from __future__ import annotations

import numpy as np


class FreeIndex:
    __slots__ = ("hist", "_per_v")

    def __init__(self, hist: np.ndarray) -> None:
        self.hist = hist
        self._per_v = np.arange(hist.shape[1], dtype=np.int64)

    @classmethod
    def build(cls, model_idx: np.ndarray, gpu_free: np.ndarray, schedulable: np.ndarray,
              n_models: int, max_gpus: int) -> FreeIndex:
        hist = np.zeros((max(n_models, 1), max_gpus + 1), np.int64)
        free = np.clip(gpu_free, 0, max_gpus)
        np.add.at(hist, (model_idx[schedulable].astype(np.int64), free[schedulable]), 1)
        return cls(hist)

    def copy(self) -> FreeIndex:
        return FreeIndex(self.hist.copy())

    def move(self, model: int, old_free: int, new_free: int) -> None:
        top = self.hist.shape[1] - 1
        self.hist[model, min(max(old_free, 0), top)] -= 1
        self.hist[model, min(max(new_free, 0), top)] += 1

    def max_pods(self, gpus_per_pod: int, models: list[int] | None) -> int:
        """Upper bound on pods of ``gpus_per_pod`` whole GPUs that fit now (GPU dimension only)."""
        rows = self.hist if models is None else self.hist[models]
        return int((rows.sum(axis=0) * (self._per_v // gpus_per_pod)).sum())
