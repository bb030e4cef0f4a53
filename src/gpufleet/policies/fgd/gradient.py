"""Fragmentation gradient: F_n(M) - F_n'(M) for every feasible node (and GPU) at once.

n' is node n after hypothetically placing the pod. Using the fast form of `measure`:
  F_n(M) = P G_n - sum_j g_j W1[T, b(c_n), g_j] - sum_r Wk_r[T, b(c_n), N_n(r)] S_n(r).
Placing a pod changes c to c' = c - c_t (hence the bucket b'), and
* a sharing pod on GPU j changes one entry, g_j -> g_j - r_t.  The single-GPU part becomes
      base' - g_j W1[b', g_j] + (g_j - r_t) W1[b', g_j - r_t],   base' = sum_i g_i W1[b', g_i],
  and N(r), S(r) change by the entering/leaving term of GPU j alone: an (nodes x GPUs) evaluation;
* a whole-GPU pod takes k GPUs at 1000 to 0: base' - 1000 k W1[b', 1000], N' = N - k, S' = S - 1000 k;
* a CPU-only pod changes only the bucket;
* a multi-GPU share (k > 1 GPUs at r < 1000 each) takes r from the k GPUs with room in ascending
  free-milli order (index order on ties), as FGD's ``NodeResource.Sub`` does; the taken GPUs may
  keep room for other specs, so n' is built as a matrix and F_n' evaluated by ``FragTable.frag``.
Every case is a few gathers and sums over the (candidates x GPUs) array, no per-node Python loop.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gpufleet.policies.fgd.cluster import ClusterState, PodRequest
from gpufleet.policies.fgd.measure import MILLI, FragTable

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _candidates(state: ClusterState, pod: PodRequest, cand: IntArray, table: FragTable | None
                ) -> tuple[FragTable, IntArray, IntArray, IntArray, IntArray]:
    """Per candidate: free milli per GPU, GPU model, CPU left after the pod, and its table row."""
    table = table or state.table
    model = state.model_idx[cand]
    cpu_after = state.cpu_left[cand] - pod.cpu
    return table, state.gpu_free[cand], model, cpu_after, table.row(model, cpu_after)


def frag_after_share(state: ClusterState, pod: PodRequest, cand: IntArray,
                     table: FragTable | None = None) -> FloatArray:
    """F_{n'}(M) for a sharing pod on each (candidate, GPU j); +inf where GPU j lacks room."""
    table, free, model, cpu_after, row = _candidates(state, pod, cand, table)
    w_now = table.w1_at(row, free)
    base = (free * w_now).sum(axis=1)
    fits = free >= pod.milli
    free_after = np.where(fits, free - pod.milli, 0)
    usable = base[:, None] - free * w_now + free_after * table.w1_at(row, free_after)
    n_at: dict[int, IntArray] = {}
    s_at: dict[int, IntArray] = {}
    for r, _, _ in table.multi:
        was, now = free >= r, free_after >= r
        n_at[r] = was.sum(axis=1)[:, None] - was + now
        s_at[r] = np.where(was, free, 0).sum(axis=1)[:, None] - np.where(was, free, 0) + np.where(
            now, free_after, 0)
    total = table.p_total * (free.sum(axis=1)[:, None] - pod.milli)
    after = total - usable - table.multi_part(model, cpu_after, n_at, s_at)
    return np.where(fits, after, np.inf)


def frag_after_whole(state: ClusterState, pod: PodRequest, cand: IntArray,
                     table: FragTable | None = None) -> FloatArray:
    """F_{n'}(M) for a whole-GPU pod (k GPUs of 1000) or a CPU-only pod (k = 0) on each candidate."""
    table, free, model, cpu_after, row = _candidates(state, pod, cand, table)
    taken = pod.count * MILLI
    usable = (free * table.w1_at(row, free)).sum(axis=1) - taken * table.w1_flat[row + MILLI]
    n_at = {r: (free >= r).sum(axis=1) - pod.count for r, _, _ in table.multi}
    s_at = {r: np.where(free >= r, free, 0).sum(axis=1) - taken for r, _, _ in table.multi}
    total = table.p_total * (free.sum(axis=1) - taken)
    return total - usable - table.multi_part(model, cpu_after, n_at, s_at)


def sub_order(free: IntArray, milli: int, count: int) -> IntArray:
    """Per row of ``free`` (candidates x GPUs), the ``count`` GPUs FGD's ``NodeResource.Sub`` takes:
    those with at least ``milli`` free, ascending by free milli, lowest index on ties."""
    room = np.where(free >= milli, free, MILLI + 1)
    return np.argsort(room, axis=1, kind="stable")[:, :count]


def frag_after_multi_share(state: ClusterState, pod: PodRequest, cand: IntArray,
                           table: FragTable | None = None) -> FloatArray:
    """F_{n'}(M) for a pod of ``count`` > 1 GPUs at ``milli`` < 1000 each on each candidate."""
    table, free, model, cpu_after, _ = _candidates(state, pod, cand, table)
    taken = sub_order(free, pod.milli, pod.count)
    after = free.copy()
    rows = np.arange(len(cand))[:, None]
    after[rows, taken] -= pod.milli
    return table.frag(model, cpu_after, after)


def gradient(state: ClusterState, pod: PodRequest, cand: IntArray,
             table: FragTable | None = None) -> FloatArray:
    """Delta = F_n(M) - F_{n'}(M): (candidates, GPUs) for sharing pods (-inf where no room),
    (candidates,) otherwise. Positive means the placement lowers fragmentation.

    With the state's own table F_n(M) is read from the state's cache; another `table` (another
    target workload) evaluates F_n for the candidates afresh."""
    if table is None or table is state.table:
        table, now = state.table, state.frag[cand]
    else:
        now = table.frag(state.model_idx[cand], state.cpu_left[cand], state.gpu_free[cand])
    if pod.is_share:
        return now[:, None] - frag_after_share(state, pod, cand, table)
    if pod.is_multi_share:
        return now - frag_after_multi_share(state, pod, cand, table)
    return now - frag_after_whole(state, pod, cand, table)


def fgd_score(delta: FloatArray) -> npt.NDArray[np.int64]:
    """floor(100 sigmoid(Delta / 1000)) as FGD's plugin scores it: 0 = 50, +100 = 52, -1000 = 26."""
    with np.errstate(over="ignore"):
        score = np.floor(100.0 / (1.0 + np.exp(-delta / 1000.0)))
    return np.where(np.isfinite(delta) | (delta > 0), score, -1).astype(np.int64)
