"""06-FGD: Fragmentation Gradient Descent (Weng et al., ATC 2023).

Place the pod where it increases the expected fragmentation F(M) of the target workload the least:
score = floor(100 sigmoid(Delta / 1000)) with Delta = F_n(M) - F_n'(M) (see `gradient`). For a sharing
pod every GPU with room is tried; the best score wins inside the node (lowest GPU index on ties) and
is the GPU actually used. Across nodes the maximum wins, ties to the first row in priority order.
Whole-GPU pods take the first k fully free GPUs.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gpufleet.policies.fgd.cluster import ClusterState, PodRequest, first_fitting_gpus
from gpufleet.policies.fgd.gradient import fgd_score, gradient
from gpufleet.policies.scorers import first_best

IntArray = npt.NDArray[np.int64]


class FgdPolicy:
    """The authors' FGD plugin, integer sigmoid score included."""

    name = "fgd"

    def choose(self, state: ClusterState, pod: PodRequest, cand: IntArray,
               rng: np.random.Generator) -> tuple[int, IntArray]:
        delta = gradient(state, pod, cand)
        if not pod.is_share:
            node = first_best(cand, fgd_score(delta))
            return node, first_fitting_gpus(state, node, pod)
        scores = fgd_score(delta)
        best_gpu = np.argmax(scores, axis=1)
        at = int(np.argmax(scores[np.arange(len(cand)), best_gpu]))  # first on ties
        return int(cand[at]), np.array([best_gpu[at]], dtype=np.int64)
