"""FGD's fragmentation measure (Weng et al., ATC 2023), exact, with a vectorised evaluator.

Target workload M: the "typical pods". Each pod is reduced to (cpu, per-GPU milli, GPU count, allowed
models); CPU 0 counts as 100 m (Kubernetes non-zero request). Specs are sorted by count, descending,
and taken until they cover >= 95 % of the pods; their frequencies are renormalised to sum to 1.

For a node n (CPU left c_n, model T_n, free milli per GPU g_1..g_K) and a spec m, the fragment is
  F_n(m) = sum_j g_j [g_j < r_m]   if m fits on n (model allowed, c_n >= c_m, #{j: g_j >= r_m} >= k_m)
  F_n(m) = sum_j g_j              otherwise, and always for CPU-only specs (r_m = 0),
and the node fragmentation is F_n(M) = sum_m p_m F_n(m).

Fast form.  Write G_n = sum_j g_j and S_n(r) = sum_j g_j [g_j >= r].  A fitting spec removes exactly
S_n(r_m) from G_n, so  F_n(M) = P G_n - sum_m p_m [fits_m(n)] S_n(r_m), with P = sum_m p_m
(1 after renormalising; FGD's unit-test lists are not renormalised, so P is kept).
* Single-GPU specs (k_m = 1): [fits] S(r_m) = [ok_T][c_n >= c_m] sum_j g_j [g_j >= r_m], because any GPU
  with g_j >= r_m already makes the GPU test true.  So their part is per GPU:
      sum_j g_j W1[T_n, b(c_n), g_j],  W1[T, b, g] = sum_{m: k_m = 1, ok, c_m <= cpu(b), r_m <= g} p_m,
  with b(c) the number of distinct spec CPU values <= c.  W1 is a table over g = 0..1000.
* Multi-GPU specs (k_m >= 2) are few; grouped by r they contribute
      Wk_r[T_n, b(c_n), N_n(r)] * S_n(r),  Wk_r[T, b, n] = sum_{m: r_m = r, ok, c_m <= cpu(b), k_m <= n} p_m,
  with N_n(r) = #{j: g_j >= r}.
So F over all nodes is a handful of gathers on an (nodes x GPUs) array; `frag_reference` states the
definition literally and the tests check that both agree with FGD's own unit-test values.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import Enum

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
MILLI = 1000
NONZERO_CPU_MILLI = 100
POPULARITY_THRESHOLD = 0.95


class FragClass(Enum):
    """FGD's quadrants of a (node, task) pair; only Q3 leaves some idle GPU usable."""

    Q1_LACK_BOTH = "Q1"
    Q2_LACK_GPU = "Q2"
    Q3_SATISFIED = "Q3"
    Q4_LACK_CPU = "Q4"
    XL_SATISFIED = "XL"
    XR_LACK_CPU = "XR"
    NO_ACCESS = "NoAccess"


@dataclass(frozen=True, eq=False)
class TypicalPods:
    """The target workload M: spec columns and popularity p (sums to 1)."""

    cpu: IntArray
    milli: IntArray
    count: IntArray
    spec: tuple[frozenset[str], ...]
    p: FloatArray

    def __len__(self) -> int:
        return len(self.spec)


def make_typical(rows: list[tuple[int, int, int, frozenset[str], float]]) -> TypicalPods:
    """Build a target workload from (cpu, per-GPU milli, GPU count, allowed models, weight) rows."""
    return TypicalPods(
        cpu=np.array([r[0] for r in rows], dtype=np.int64),
        milli=np.array([r[1] for r in rows], dtype=np.int64),
        count=np.array([r[2] for r in rows], dtype=np.int64),
        spec=tuple(r[3] for r in rows),
        p=np.array([r[4] for r in rows], dtype=np.float64),
    )


def typical_pods(cpu_milli: IntArray, gpu_milli: IntArray, num_gpu: IntArray,
                 gpu_spec: tuple[frozenset[str], ...],
                 threshold: float = POPULARITY_THRESHOLD) -> TypicalPods:
    """The most popular pod specs covering >= `threshold` of the pods, renormalised.

    Columns are one entry per pod (CPU milli, per-GPU milli, GPU count, allowed models). Equal counts
    are ordered by the spec itself so the cut at the threshold is deterministic.
    """
    cpu = np.where(cpu_milli == 0, NONZERO_CPU_MILLI, cpu_milli)
    counts = Counter(
        (int(c), int(m), int(k), tuple(sorted(s)))
        for c, m, k, s in zip(cpu, gpu_milli, num_gpu, gpu_spec, strict=True)
    )
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    chosen: list[tuple[tuple[int, int, int, tuple[str, ...]], int]] = []
    covered = 0
    for key, n in ranked:
        chosen.append((key, n))
        covered += n
        if covered >= threshold * len(cpu):
            break
    return make_typical([(c, m, k, frozenset(s), n / covered) for (c, m, k, s), n in chosen])


def classify(cpu_left: int, gpu_free: list[int], model: str, cpu: int, milli: int, count: int,
             spec: frozenset[str]) -> FragClass:
    """FGD's class of one task spec on one node (the definition, one node at a time)."""
    if milli == 0:
        return FragClass.XL_SATISFIED if cpu_left >= cpu else FragClass.XR_LACK_CPU
    if spec and model not in spec:
        return FragClass.NO_ACCESS
    fits = sum(1 for g in gpu_free if g >= milli) >= count
    cpu_ok = cpu_left >= cpu
    if fits:
        return FragClass.Q3_SATISFIED if cpu_ok else FragClass.Q4_LACK_CPU
    return FragClass.Q2_LACK_GPU if cpu_ok else FragClass.Q1_LACK_BOTH


def frag_reference(cpu_left: int, gpu_free: list[int], model: str, typical: TypicalPods) -> float:
    """F_n(M) literally from the definition; slow, used to check the vectorised form."""
    total = 0.0
    for i in range(len(typical)):
        r = int(typical.milli[i])
        cls = classify(cpu_left, gpu_free, model, int(typical.cpu[i]), r, int(typical.count[i]),
                       typical.spec[i])
        part = sum(g for g in gpu_free if g < r) if cls is FragClass.Q3_SATISFIED else sum(gpu_free)
        total += float(typical.p[i]) * part
    return total


class FragTable:
    """Precomputed weights that turn F_n(M) into gathers over (nodes x GPUs) arrays.

    `models` fixes the model index used by `model_idx` arguments; a spec model not in `models`
    matches no node, and the empty model (CPU-only node) matches only unconstrained specs.
    """

    def __init__(self, typical: TypicalPods, models: tuple[str, ...], max_gpus: int) -> None:
        self.typical = typical
        self.models = models
        self.max_gpus = max_gpus
        self.breaks = np.unique(typical.cpu)
        n_models, n_buckets = len(models), len(self.breaks) + 1
        ok = np.array([[not s or mdl in s for mdl in models] for s in typical.spec], dtype=bool)
        ok = ok.reshape(len(typical), n_models)
        first_bucket = np.searchsorted(self.breaks, typical.cpu, side="left") + 1
        self.w1 = np.zeros((n_models, n_buckets, MILLI + 1))
        multi: dict[int, FloatArray] = {}
        for i in range(len(typical)):
            r, k, p, b = int(typical.milli[i]), int(typical.count[i]), float(typical.p[i]), first_bucket[i]
            if r == 0 or k == 0:
                continue
            if k == 1:
                self.w1[ok[i], b:, r:] += p
            else:
                table = multi.setdefault(r, np.zeros((n_models, n_buckets, max_gpus + 1)))
                table[ok[i], b:, min(k, max_gpus + 1):] += p
        self.w1_flat = self.w1.reshape(-1)
        self.multi = [(r, t.reshape(-1), t.shape[2]) for r, t in sorted(multi.items())]
        self.n_buckets = n_buckets
        self.p_total = float(typical.p.sum())

    def bucket(self, cpu_left: IntArray) -> IntArray:
        """b(c): how many distinct spec CPU values are <= c."""
        return np.searchsorted(self.breaks, cpu_left, side="right")

    def row(self, model_idx: IntArray, cpu_left: IntArray) -> IntArray:
        """Flat offset of W1[T, b(c), 0] for each node."""
        return (model_idx * self.n_buckets + self.bucket(cpu_left)) * (MILLI + 1)

    def w1_at(self, row: IntArray, gpu_free: IntArray) -> FloatArray:
        """W1[T_n, b_n, g] for an array g shaped like `row` (broadcast over trailing axes)."""
        return self.w1_flat[row.reshape(row.shape + (1,) * (gpu_free.ndim - row.ndim)) + gpu_free]

    def multi_part(self, model_idx: IntArray, cpu_left: IntArray, n_at_least: dict[int, IntArray],
                   s_at_least: dict[int, IntArray]) -> FloatArray | float:
        """sum_r Wk_r[T, b(c), N(r)] S(r) for the multi-GPU specs; N and S given per threshold r."""
        if not self.multi:
            return 0.0
        base = model_idx * self.n_buckets + self.bucket(cpu_left)
        total: FloatArray | float = 0.0
        for r, flat, width in self.multi:
            n = n_at_least[r]
            idx = base.reshape(base.shape + (1,) * (n.ndim - base.ndim)) * width + n
            total = total + flat[idx] * s_at_least[r]
        return total

    def frag(self, model_idx: IntArray, cpu_left: IntArray, gpu_free: IntArray) -> FloatArray:
        """F_n(M) for every node; gpu_free is (nodes, max_gpus) with 0 for absent GPUs."""
        row = self.row(model_idx, cpu_left)
        total = self.p_total * gpu_free.sum(axis=1)
        usable = (gpu_free * self.w1_at(row, gpu_free)).sum(axis=1)
        n_at = {r: (gpu_free >= r).sum(axis=1) for r, _, _ in self.multi}
        s_at = {r: np.where(gpu_free >= r, gpu_free, 0).sum(axis=1) for r, _, _ in self.multi}
        return total - usable - self.multi_part(model_idx, cpu_left, n_at, s_at)
