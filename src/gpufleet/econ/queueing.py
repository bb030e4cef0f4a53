"""Erlang and Poisson arithmetic for warm pools, and a seeded simulation that checks it.

Offered load A = λ·S erlangs (arrival rate λ, time S a request holds a warm instance).

* **Erlang B** (loss): a request that finds all N warm instances busy takes the cold path.
  B(0) = 1; B(n) = A·B(n−1) / (n + A·B(n−1)) — the stable recursion of Aᴺ/N! / Σ Aᵏ/k!.
  B depends on S only through its mean (insensitivity), so the check below may draw any
  service-time distribution.
* **Erlang C** (wait): the request queues for a warm instance instead. For N > A,
  C = N·B / (N − A(1 − B)); mean wait W_q = C·S / (N − A).
* **Burst spare**: arrivals during a cold start of T seconds are Poisson(λT); the warm spare that
  covers them with probability p is its p-quantile.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
from scipy.stats import poisson

from gpufleet.studies import reliability


def erlang_b(n: int, a: float) -> float:
    """Erlang B for ``n`` servers at ``a`` Erlangs: the one recurrence in studies/reliability.py."""
    return reliability.erlang_b(a, n)


def erlang_c(n: int, a: float) -> float:
    if n <= a:
        return 1.0
    b = erlang_b(n, a)
    return n * b / (n - a * (1.0 - b))


def pool_for_loss(a: float, target: float, limit: int = 1_000_000) -> int:
    """Smallest N with B(N, A) < target (the recursion walks N upward once)."""
    b = 1.0
    if b < target:
        return 0
    for n in range(1, limit + 1):
        b = a * b / (n + a * b)
        if b < target:
            return n
    raise ValueError(f"warm pool: no size up to {limit} reaches P(cold) < {target}")


def pool_for_wait(a: float, target: float, limit: int = 1_000_000) -> int:
    """Smallest N with C(N, A) < target."""
    n = max(1, math.floor(a) + 1)
    while n <= limit:
        if erlang_c(n, a) < target:
            return n
        n += 1
    raise ValueError(f"warm pool: no size up to {limit} reaches P(wait) < {target}")


def burst_spare(rate_per_s: float, window_s: float, quantile: float = 0.99) -> int:
    """Requests arriving during a cold start of ``window_s``: the ``quantile`` of Poisson(λT)."""
    return int(poisson.ppf(quantile, rate_per_s * window_s))


def simulate_loss(n: int, rate_per_s: float, hold_s: float, arrivals: int, seed: int,
                  service: str = "exponential") -> float:
    """Fraction of requests finding all ``n`` warm instances busy, in a seeded event simulation
    of Poisson arrivals (the first 5% are warm-up and not counted)."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate_per_s, arrivals)
    times = np.cumsum(gaps)
    holds = (rng.exponential(hold_s, arrivals) if service == "exponential"
             else np.full(arrivals, hold_s))
    busy: list[float] = []
    warm_up = arrivals // 20
    cold = 0
    for i in range(arrivals):
        t = times[i]
        while busy and busy[0] <= t:
            heapq.heappop(busy)
        if len(busy) >= n:
            if i >= warm_up:
                cold += 1
            continue
        heapq.heappush(busy, t + holds[i])
    return cold / (arrivals - warm_up)
