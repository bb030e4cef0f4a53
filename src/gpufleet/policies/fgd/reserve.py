"""fgdres: FGD's gradient plus two reserves, for scarce GPU models and for the CPU of free GPUs.

Our policy, not the paper's. Online: one pod at a time; the only knowledge of the future is the
target workload M (FGD's typical pods, same 95 % cut) and the cluster's own node list.

Where FGD loses GPU on openb (failed GPU milli before arrived = 100 %, seeds 42..44):
* gpuspec traces: pods restricted to scarce models (V100M16/M32, P100, G3, T4) fail because
  unconstrained pods used those nodes first. FGD's measure sees a model constraint only through the
  constrained specs' *popularity* (a tail of the 95 % cut, p ~ 0.003 each), so a placement on a
  scarce model usually costs under 40 milli of gradient: less than one point of the integer score,
  and the seeded node order decides.
* CPU-heavy traces (cpu235, cpu300): CPU-only pods take the CPU of nodes whose GPUs are still free
  (FGD scores every node 50 whenever the CPU drop crosses no spec's CPU request), so those GPUs
  are stranded; the 8-GPU pods then find no empty node with 64-88 CPU.

Rule (the maximum wins, ties to the first row in priority order, like FGD):
1. GPU pods: score = floor(100 sigmoid(Delta / 1000))            FGD's integer score, same Delta
                     - SCARCITY_POINTS * pi_T * (k r / 1000)     scarce-model reserve
   where pi_T is the *pressure* on the node's model T:
       v_m  = p_m r_m k_m                                  GPU demand of spec m (typical pods),
       d_T  = sum_{m constrained, T in S_m} v_m cap_T / cap(S_m)   (split over allowed models
                                                                   in proportion to their GPUs),
       pi_T = (d_T / sum_m v_m) / (cap_T / cap_cluster)    share of demand that can only go to T,
                                                           over T's share of the cluster's GPUs.
   pi_T = 0 for models no constrained spec asks for (every model on unconstrained traces, so
   there the rule is FGD's score); on gpuspec20 pi = 0.70 for T4, 0.44 P100, 0.21 V100M16/M32,
   0.09 G3, 0.05 G2. With 5 points per GPU, an unconstrained 1-GPU pod pays 3.5 points (about 140
   milli of gradient near Delta = 0) to land on T4: it goes to a G2 node instead unless that node's
   gradient is more than ~140 milli worse. A pod restricted to one model pays the same on every
   candidate, so its choice is FGD's. 5, 10 and 20 points give the same result on gpuspec20.
   Sharing pods keep FGD's per-GPU choice (best integer score, lowest GPU on ties).
   Remaining ties: CPU/GPU balance (fgdbal's tie-break). kappa = sum_m p_m c_m / sum_m p_m r_m k_m
   over GPU specs (about 10.9 CPU milli per GPU milli on openb) and the slack after placing is
   s_n = (c_n - c_t) - kappa (G_n - k r); prefer the smallest DEFICIT_WEIGHT max(-s, 0) + max(s, 0).
2. CPU-only pods: maximise  (c_n - c_t) - RESERVE_FACTOR kappa G_n,  i.e. the CPU left after
   keeping RESERVE_FACTOR x kappa (about 44 CPU) for every free GPU. A node whose GPUs are all
   taken gives its CPU away for free; a node with free GPUs must have a lot of CPU to spare.
   RESERVE_FACTOR = 4 is tuned (seeds 42..44, unallocated % minus FGD's): factor 1 (fgdbal's rule)
   +0.33 on cpu235, 2: -0.54, 4: -0.95, 8: -0.76, "GPU-full nodes first" (infinite): -0.32; on
   default 1..4 give -0.30, 8: -0.14, infinite: +0.14. So CPU pods must prefer GPU-full nodes, but
   not at any price: a nearly empty node's CPU is also needed by its GPUs' future pods.

Cost: FGD's gradient plus one gather per candidate (none for CPU-only pods); kappa and the pressure
table are computed once per target workload. Result (bench/README.md): lower unallocated GPU % at
arrived 100 % than FGD on all 16 openb traces, in each of the 160 (trace, seed 42..51) pairs.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gpufleet.policies.fgd.cluster import ClusterState, PodRequest
from gpufleet.policies.fgd.measure import MILLI, FragTable
from gpufleet.policies.fgd.ours import cpu_per_gpu_milli, pick_balanced
from gpufleet.policies.scorers import first_best

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
SCARCITY_POINTS = 5.0
RESERVE_FACTOR = 4.0


def model_pressure(table: FragTable, models: tuple[str, ...], gpus_per_model: FloatArray) -> FloatArray:
    """pi_T for each model index: the share of the target workload's GPU demand that only model
    sets containing T can take (split over the set by GPU count), over T's share of the GPUs."""
    t = table.typical
    demand = (t.p * t.milli * t.count).astype(np.float64)
    total_demand = float(demand.sum())
    capacity = float(gpus_per_model.sum())
    pressure = np.zeros(len(models))
    if total_demand <= 0 or capacity <= 0:
        return pressure
    for i, spec in enumerate(t.spec):
        if not spec or demand[i] <= 0:
            continue
        ok = np.array([m in spec for m in models])
        in_set = float(gpus_per_model[ok].sum())
        if in_set > 0:
            pressure[ok] += demand[i] * gpus_per_model[ok] / in_set
    share = gpus_per_model / capacity
    return np.divide(pressure / total_demand, share, out=np.zeros(len(models)), where=share > 0)


class FgdReservePolicy:
    """FGD's score minus a scarce-model reserve; CPU-only pods keep CPU for free GPUs."""

    name = "fgdres"

    def __init__(self, scarcity_points: float = SCARCITY_POINTS,
                 reserve_factor: float = RESERVE_FACTOR) -> None:
        self.scarcity_points = scarcity_points
        self.reserve_factor = reserve_factor
        self._prepared: dict[int, tuple[FragTable, float, FloatArray]] = {}

    def prepare(self, state: ClusterState) -> tuple[float, FloatArray]:
        """(kappa, pi per model index) for the state's target workload and cluster, cached.

        The cache holds the table itself, so its id cannot be reused by another table while cached."""
        key = id(state.table)
        if key not in self._prepared or self._prepared[key][0] is not state.table:
            gpus = np.bincount(state.model_idx, weights=state.ngpu, minlength=len(state.models))
            self._prepared[key] = (state.table, cpu_per_gpu_milli(state.table),
                                   model_pressure(state.table, state.models, gpus.astype(np.float64)))
        _, kappa, pressure = self._prepared[key]
        return kappa, pressure

    def choose(self, state: ClusterState, pod: PodRequest, cand: IntArray,
               rng: np.random.Generator) -> tuple[int, IntArray]:
        kappa, pressure = self.prepare(state)
        cpu_after = state.cpu_left[cand] - pod.cpu
        gpu_after = state.gpu_left[cand] - pod.total_milli
        if pod.count == 0:
            spare = cpu_after - self.reserve_factor * kappa * gpu_after
            return first_best(cand, spare), np.empty(0, np.int64)
        reserve = self.scarcity_points * pressure[state.model_idx[cand]] * (pod.total_milli / MILLI)
        return pick_balanced(state, pod, cand, cpu_after - kappa * gpu_after, reserve)
