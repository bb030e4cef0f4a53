"""Across seeds: a mean with its t-interval, and paired tests between policies.

Seeds are the replications. For one setting (scenario + parameters) and one metric, policy P has
values x_1..x_n, one per seed. The 95% interval of the mean is x̄ ± t(0.975, n−1) · s / √n, with s the
sample standard deviation (Student's t: n is small, 3 to 10 seeds, so the normal 1.96 would be too
narrow; for n = 5, t = 2.776).

Two policies run on the *same* workloads seed by seed, so they are compared with a paired test:
d_i = a_i − b_i, t = d̄ / (s_d / √n), two-sided p from Student's t with n − 1 degrees of freedom
(``scipy.stats.ttest_rel``). Pairing removes the seed-to-seed variation that both policies share,
which is most of it. With k policies there are k(k−1)/2 tests per metric, so the p-values are
Holm-adjusted within each (setting, metric) before they are called significant at 0.05.
A difference that is identical on every seed has s_d = 0: the t statistic is undefined; it is
reported as p = 0 when d ≠ 0 (the same sign and size on every seed) and p = 1 when d = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import stats

from gpufleet.studies.estimate import t_interval

__all__ = ["Paired", "holm", "paired_p", "paired_tests", "t_interval"]


@dataclass(frozen=True)
class Paired:
    a: str
    b: str
    mean_diff: float  # mean of a − b over seeds
    p: float  # two-sided paired t-test
    p_holm: float
    n: int

    @property
    def significant(self) -> bool:
        return self.n >= 2 and self.p_holm < 0.05


def paired_p(a: np.ndarray, b: np.ndarray) -> float:
    d = a - b
    if d.size < 2:
        return math.nan
    if float(np.ptp(d)) == 0.0:
        return 0.0 if d[0] != 0 else 1.0
    return float(stats.ttest_rel(a, b).pvalue)


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjustment: the i-th smallest of m p-values is multiplied by (m − i), and the
    adjusted values are made non-decreasing in that order, capped at 1. NaN stays NaN."""
    idx = [i for i, p in enumerate(pvalues) if not math.isnan(p)]
    order = sorted(idx, key=lambda i: pvalues[i])
    m = len(order)
    out = list(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def paired_tests(by_policy: dict[str, dict[int, float]]) -> list[Paired]:
    """Every pair of policies, on the seeds both have a finite value for."""
    raw = []
    for a, b in combinations(by_policy, 2):
        seeds = sorted(s for s in by_policy[a] if s in by_policy[b]
                       and math.isfinite(by_policy[a][s]) and math.isfinite(by_policy[b][s]))
        xa = np.array([by_policy[a][s] for s in seeds], float)
        xb = np.array([by_policy[b][s] for s in seeds], float)
        diff = float((xa - xb).mean()) if seeds else math.nan
        raw.append((a, b, diff, paired_p(xa, xb), len(seeds)))
    adjusted = holm([r[3] for r in raw])
    return [Paired(a, b, d, p, ph, n) for (a, b, d, p, n), ph in zip(raw, adjusted, strict=True)]
