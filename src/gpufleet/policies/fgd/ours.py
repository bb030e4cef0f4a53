"""fgdbal: FGD's gradient with a CPU-balance tie-break. Our policy, not the paper's.

Superseded by `fgdres` (reserve.py), which keeps this tie-break and adds a scarce-model reserve and
a CPU reserve for CPU-only pods: fgdbal ties FGD on gpuspec20 and loses to it on cpu235/cpu300.

Why.  FGD's integer sigmoid score resolves about 40 milli of gradient per point, so most pods see
many nodes tied at the best score, and FGD gives them to the first node in the seeded priority
order. On openb the unallocated GPU that FGD leaves at 100 % arrived is largely *CPU-stranded*: the
8-GPU G2 nodes carry 12 CPU per GPU while GPU pods ask for about 11 on average, and random tie
winners (and CPU-only pods placed on them) use the CPU up, leaving free GPUs nobody can start on.

Rule.  Let kappa be the target workload's CPU per GPU milli (sum_m p_m c_m / sum_m p_m r_m k_m over
GPU specs). The CPU slack of a node after placing the pod is
    s_n = (c_n - c_t) - kappa (G_n - r_t k_t)
(CPU left beyond what its remaining free GPU is expected to need).
* GPU pods: maximise FGD's integer score (same Delta, same per-GPU choice); among tied nodes minimise
  the imbalance  DEFICIT_WEIGHT max(-s_n, 0) + max(s_n, 0): a node whose CPU and GPU run out together
  is best, and a node left short of CPU for its free GPUs (which strands them) costs 10x more than
  one left with spare CPU. Remaining ties: priority order, as FGD.
* CPU-only pods: FGD's gradient cannot tell nodes apart (a CPU-only spec counts all idle GPU as
  fragment wherever it is), so take the node with the largest s_n: CPU nobody's GPUs will need.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gpufleet.policies.fgd.cluster import ClusterState, PodRequest, first_fitting_gpus
from gpufleet.policies.fgd.gradient import fgd_score, gradient
from gpufleet.policies.fgd.measure import FragTable
from gpufleet.policies.scorers import first_best

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
TIE_SCALE = 1e-9
DEFICIT_WEIGHT = 10.0


def cpu_per_gpu_milli(table: FragTable) -> float:
    """kappa: CPU milli the target workload asks per GPU milli, over its GPU specs."""
    t = table.typical
    gpu = (t.milli * t.count).astype(np.float64)
    demand = float((t.p * gpu).sum())
    return float((t.p * t.cpu * (gpu > 0)).sum()) / demand if demand > 0 else 0.0


class FgdBalancePolicy:
    """FGD's score, ties broken towards CPU/GPU balance; CPU-only pods to spare CPU."""

    name = "fgdbal"

    def __init__(self) -> None:
        #: kappa of the last table asked about, with the table itself: the entry keeps its table
        #: alive and is matched by identity, so a new table can never inherit a dead one's kappa
        #: (an ``id()`` key can: CPython reuses the address of a freed object).
        self._kappa: tuple[FragTable, float] | None = None

    def kappa(self, table: FragTable) -> float:
        if self._kappa is None or self._kappa[0] is not table:
            self._kappa = (table, cpu_per_gpu_milli(table))
        return self._kappa[1]

    def _slack(self, state: ClusterState, pod: PodRequest, cand: IntArray) -> FloatArray:
        gpu_after = state.gpu_left[cand] - pod.total_milli
        return (state.cpu_left[cand] - pod.cpu) - self.kappa(state.table) * gpu_after

    def choose(self, state: ClusterState, pod: PodRequest, cand: IntArray,
               rng: np.random.Generator) -> tuple[int, IntArray]:
        slack = self._slack(state, pod, cand)
        if pod.count == 0:
            return first_best(cand, slack), np.empty(0, np.int64)
        return pick_balanced(state, pod, cand, slack)


def pick_balanced(state: ClusterState, pod: PodRequest, cand: IntArray, slack: FloatArray,
                  penalty: FloatArray | float = 0.0) -> tuple[int, IntArray]:
    """FGD's integer score (best GPU per node for a share) minus ``penalty``, ties broken towards
    CPU/GPU balance: a CPU deficit (negative ``slack``) weighs DEFICIT_WEIGHT× a surplus.
    Returns the node and the GPUs the pod takes there."""
    scores = fgd_score(gradient(state, pod, cand)).astype(np.float64)
    best_gpu = None
    if pod.is_share:
        best_gpu = np.argmax(scores, axis=1)
        scores = scores[np.arange(len(cand)), best_gpu]
    imbalance = DEFICIT_WEIGHT * np.maximum(-slack, 0.0) + np.maximum(slack, 0.0)
    at = int(np.argmax(scores - penalty - TIE_SCALE * imbalance))
    node = int(cand[at])
    if best_gpu is not None:
        return node, np.array([best_gpu[at]], dtype=np.int64)
    return node, first_fitting_gpus(state, node, pod)
