"""Reliability arithmetic: the formulas the simulator's failure runs are checked against.

Every function gives the closed form; tests/unit/studies/test_reliability_math.py works each one by
hand and tests/unit/sim/fleet_events/test_failures_sim.py checks the simulated figure within 5%.
Sources: Young, CACM 17(9) 1974; Daly, FGCS 22(3) 2006; Palm's theorem (M/G/∞); Erlang B.
"""

from __future__ import annotations

import math

import numpy as np


def job_mtti_s(nodes: int, rate_per_node_s: float) -> float:
    """Mean time to interruption of a gang of ``nodes`` independent nodes in series: 1 / (N r).
    A gang of n nodes is interrupted n times as often as one node."""
    return math.inf if nodes <= 0 or rate_per_node_s <= 0 else 1.0 / (nodes * rate_per_node_s)


def young_interval_s(delta_s: float, mtti_s: float) -> float:
    """Young (1974): τ ≈ √(2 δ M)."""
    return math.sqrt(2.0 * delta_s * mtti_s)


def daly_interval_s(delta_s: float, mtti_s: float) -> float:
    """Daly (2006): τ = √(2δM)·[1 + ⅓√(δ/2M) + (1/9)(δ/2M)] − δ for δ < 2M, else M."""
    if delta_s >= 2.0 * mtti_s:
        return mtti_s
    x = delta_s / (2.0 * mtti_s)
    return math.sqrt(2.0 * delta_s * mtti_s) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - delta_s


def daly_exact_interval_s(delta_s: float, mtti_s: float) -> float:
    """The τ that minimises Daly's exact expected wall time (``daly_wall_s``; R only scales it by
    e^{R/M}): d/dτ [(e^{(τ+δ)/M} − 1)/τ] = 0 gives e^{(τ+δ)/M}(1 − τ/M) = 1, whose root in (0, M) is
    τ = M·[1 + W₀(−e^{−1−δ/M})] with W₀ the principal Lambert W. Daly's higher-order estimate
    (``daly_interval_s``) is its series in √(δ/2M); Young's √(2δM) the first term."""
    from scipy.special import lambertw

    return float(mtti_s * (1.0 + lambertw(-math.exp(-1.0 - delta_s / mtti_s), 0).real))


def daly_wall_s(solve_s: float, tau_s: float, delta_s: float, restart_s: float, mtti_s: float) -> float:
    """Daly's expected wall time with exponential failures: T_w = M e^{R/M} (e^{(τ+δ)/M} − 1) T_s / τ."""
    m = mtti_s
    return m * math.exp(restart_s / m) * math.expm1((tau_s + delta_s) / m) * solve_s / tau_s


def daly_goodput(tau_s: float, delta_s: float, restart_s: float, mtti_s: float) -> float:
    """T_s / T_w: the share of wall time that is new, useful work."""
    return 1.0 / daly_wall_s(1.0, tau_s, delta_s, restart_s, mtti_s)


def first_order_waste(tau_s: float, delta_s: float, restart_s: float, mtti_s: float) -> float:
    """δ/τ + (τ+δ)/(2M) + R/M: checkpoint cost, half an interval lost per failure, the restart."""
    return delta_s / tau_s + (tau_s + delta_s) / (2.0 * mtti_s) + restart_s / mtti_s


def poisson_cdf(k: int, lam: float) -> float:
    """P(X ≤ k) for X ~ Poisson(λ), summed in log space (λ up to thousands)."""
    if k < 0:
        return 0.0
    if lam <= 0:
        return 1.0
    term = math.exp(-lam)
    if term == 0.0:  # large λ: start from the mode in log space
        total = 0.0
        for i in range(k + 1):
            total += math.exp(-lam + i * math.log(lam) - math.lgamma(i + 1))
        return min(total, 1.0)
    total = term
    for i in range(1, k + 1):
        term *= lam / i
        total += term
    return min(total, 1.0)


def no_spare_probability(spares: int, failures_per_s: float, out_of_service_s: float) -> float:
    """P(a failure finds the pool empty) = P(N ≥ s), N ~ Poisson(Λ E[T]) nodes away for repair.

    Palm's theorem: with failures at rate Λ and each node away a time T of any distribution, the
    number away is Poisson with mean Λ E[T]; by PASTA a failure sees that distribution, and finds
    no spare when s or more are already away."""
    return 1.0 - poisson_cdf(spares - 1, failures_per_s * out_of_service_s)


def spares_needed(failures_per_s: float, out_of_service_s: float, risk: float = 0.01) -> int:
    """Smallest s with P(no spare when needed) < ``risk``."""
    s = 0
    while no_spare_probability(s, failures_per_s, out_of_service_s) >= risk:
        s += 1
    return s


def spares_for_pool(nodes: int, rate_per_node_s: float, out_of_service_s: float, risk: float = 0.01) -> int:
    """Spares for ``nodes`` in service when the idle spares fail too: failures arrive at
    Λ = (nodes + s) r, so s is the smallest with P(Poisson((N + s) r E[T]) ≥ s) < risk."""
    s = spares_needed(nodes * rate_per_node_s, out_of_service_s, risk)
    while no_spare_probability(s, (nodes + s) * rate_per_node_s, out_of_service_s) >= risk:
        s += 1
    return s


def node_down_probability(rate_per_node_s: float, away_s: float) -> float:
    """Share of time one node is away: it fails at r while up and is away E[T] each time, so
    p = r E[T] / (1 + r E[T]) (alternating renewal; any distribution of T)."""
    x = rate_per_node_s * away_s
    return x / (1.0 + x)


def no_spare_probability_finite(nodes: int, spares: int, rate_per_node_s: float, away_s: float) -> float:
    """P(a failure of an in-service node finds the pool empty), finite source: the M = N + s nodes
    are independent alternating renewal processes (a node away for repair cannot fail again; idle
    spares fail like the rest), so the number away D is Binomial(M, p), p = node_down_probability.
    With d away, min(N, M − d) nodes are in service and the pool holds max(0, s − d); in-service
    failures come at r·min(N, M − d), so the share of them that find the pool empty is

        P = Σ_{d ≥ s} π(d)(M − d) / Σ_d π(d) min(N, M − d),   π = Binomial(M, p).

    (The failures are weighted by how many nodes are in service: with more nodes away, a larger
    share of the up nodes is in service.) Poisson over the whole pool (``no_spare_probability``)
    lets a node away fail again; it over-states the tail when the fleet is small: N = 16,
    r E[T] = 0.1, s = 6: 1.15% here, 2.49% by Poisson, 1.09 ± 0.12% simulated."""
    if spares <= 0:
        return 1.0
    from scipy.stats import binom

    m = nodes + spares
    p = node_down_probability(rate_per_node_s, away_s)
    d = np.arange(m + 1)
    pi = binom.pmf(d, m, p)
    in_service = np.minimum(nodes, m - d)
    den = float((pi * in_service).sum())
    return float((pi[spares:] * (m - d[spares:])).sum()) / den if den > 0 else 1.0


def spares_for_pool_finite(nodes: int, rate_per_node_s: float, away_s: float, risk: float = 0.01,
                           limit: int = 1_000_000) -> int:
    """Smallest s with no_spare_probability_finite(N, s) < ``risk`` (P falls as s grows)."""
    s = spares_needed(nodes * rate_per_node_s, away_s, risk) // 2
    while s > 0 and no_spare_probability_finite(nodes, s - 1, rate_per_node_s, away_s) < risk:
        s -= 1
    while no_spare_probability_finite(nodes, s, rate_per_node_s, away_s) >= risk:
        s += 1
        if s > limit:
            raise ValueError(f"spares: no pool up to {limit:,} keeps P(no spare) under {risk}")
    return s


def erlang_b(offered: float, servers: int) -> float:
    """Erlang B blocking: B(E,0)=1, B(E,k) = E·B(E,k−1) / (k + E·B(E,k−1))."""
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    return b


def spot_waste_per_reclaim_s(tau_s: float, restart_s: float) -> float:
    """Work lost per reclaim when the notice is too short to checkpoint: on average half a
    checkpoint interval since the last save, plus the restart: τ/2 + R."""
    return tau_s / 2.0 + restart_s


def spot_waste_noticed_s(notice_s: float, restart_s: float, tau_s: float = math.inf,
                         delta_s: float = 0.0) -> float:
    """Work lost per reclaim when the checkpoint write fits in the notice (δ ≤ notice), in wall
    seconds: the job saves at the notice, and what it computes until the node goes is lost — the
    notice's wall time, at τ of work per τ + δ — plus the restart: in the simulator's work units
    notice·(τ+δ)/τ + R (fleet_events/spot.py saves the progress at the notice). With no
    periodic checkpoints (τ = ∞, none is needed against reclaims then) it is notice + R.
    Reference §5.4 writes R + δ_emergency, for a job released as soon as its write ends; a spot
    node is held and paid until it goes, so the whole notice is charged here, as the simulator does."""
    stretch = 1.0 if math.isinf(tau_s) else (tau_s + delta_s) / tau_s
    return notice_s * stretch + restart_s


def spot_waste_exact_s(interval_wall_s: float, restart_s: float, reclaims_per_s: float) -> float:
    """The renewal-exact mean waste when reclaims are Poisson at λ and saves come every τ' of wall
    time: E[X mod τ'] for X ~ Exp(λ) is 1/λ − τ' e^{−λτ'} / (1 − e^{−λτ'}); plus R. It tends to
    τ'/2 + R when τ' ≪ 1/λ and is smaller when the interval is a fair share of the MTTI."""
    x = reclaims_per_s * interval_wall_s
    return 1.0 / reclaims_per_s - interval_wall_s * math.exp(-x) / -math.expm1(-x) + restart_s


def spot_waste_exact_second_moment_s2(interval_wall_s: float, restart_s: float,
                                      reclaims_per_s: float) -> float:
    """E[W²] for W = (X mod τ') + R, X ~ Exp(λ): Y = X mod τ' has density λe^{−λy}/(1 − e^{−λτ'}) on
    [0, τ'), so E[Y²] = [2/λ² − e^{−λτ'}(τ'² + 2τ'/λ + 2/λ²)] / (1 − e^{−λτ'}); E[W²] = E[Y²] +
    2R E[Y] + R². (The spread of the simulated waste: a compound-Poisson sum has variance λH E[W²].)"""
    lam, t, r = reclaims_per_s, interval_wall_s, restart_s
    q = math.exp(-lam * t)
    ey2 = (2 / lam**2 - q * (t * t + 2 * t / lam + 2 / lam**2)) / (1 - q)
    ey = spot_waste_exact_s(t, 0.0, lam)
    return ey2 + 2 * r * ey + r * r


def spot_break_even_exact(tau_s: float, delta_s: float, restart_s: float, reclaims_per_s: float) -> float:
    """Break-even discount against an on-demand node that checkpoints too (u_od = τ/(τ+δ)), with the
    renewal-exact waste: each reclaim (λ per paid second) wastes W = E[X mod τ'] + R of wall time,
    so u_spot = u_od (1 − λW) and d* = 1 − u_spot/u_od = λ W."""
    return reclaims_per_s * spot_waste_exact_s(tau_s + delta_s, restart_s, reclaims_per_s)


def spot_useful_share_exact(tau_s: float, delta_s: float, restart_s: float, reclaims_per_s: float) -> float:
    """Share of paid spot time that is useful work with the renewal-exact waste:
    τ/(τ+δ) · (1 − λ W), W = spot_waste_exact_s(τ + δ, R, λ); 0 when the waste eats it all."""
    w = spot_waste_exact_s(tau_s + delta_s, restart_s, reclaims_per_s)
    return max(0.0, tau_s / (tau_s + delta_s) * (1.0 - reclaims_per_s * w))


def best_spot_interval(delta_s: float, restart_s: float, reclaims_per_s: float) -> tuple[float, float]:
    """(τ, useful share) maximising ``spot_useful_share_exact``: a bounded scalar search over
    τ ∈ [δ/100, 100/λ] (the share is unimodal in τ: checkpoint cost falls, lost work grows)."""
    from scipy.optimize import minimize_scalar

    lo, hi = max(1.0, delta_s / 100.0), 100.0 / reclaims_per_s
    def loss(log_tau: float) -> float:
        return -spot_useful_share_exact(math.exp(log_tau), delta_s, restart_s, reclaims_per_s)

    res = minimize_scalar(loss, bounds=(math.log(lo), math.log(hi)), method="bounded",
                          options={"xatol": 1e-6})
    tau = math.exp(res.x)
    return tau, spot_useful_share_exact(tau, delta_s, restart_s, reclaims_per_s)


def spot_useful_share(tau_s: float, delta_s: float, restart_s: float, reclaims_per_s: float) -> float:
    """Share of paid spot time that is useful work, first order: (1 − δ/(τ+δ)) − λ (τ/2 + R)."""
    return tau_s / (tau_s + delta_s) - reclaims_per_s * spot_waste_per_reclaim_s(tau_s, restart_s)


def spot_break_even_discount(tau_s: float, delta_s: float, restart_s: float, reclaims_per_s: float,
                             on_demand_useful: float = 1.0) -> float:
    """The discount at which spot and on-demand cost the same per useful hour:
    (1 − d) / u_spot = 1 / u_od  ⇒  d* = 1 − u_spot / u_od."""
    return 1.0 - spot_useful_share(tau_s, delta_s, restart_s, reclaims_per_s) / on_demand_useful


def node_availability(rate_per_node_s: float, away_s: float) -> float:
    """Share of time a node is in service when it fails at r while in service and is away E[T]
    each time (an alternating renewal process): A = (1/r) / (1/r + E[T]) = 1 / (1 + r E[T])."""
    return 1.0 / (1.0 + rate_per_node_s * away_s)


def mean_availability(rate_per_node_s: float, away_s: float, wall_s: float | None = None) -> float:
    """A node's in-service share averaged over a run of ``wall_s`` that starts with it up: with
    exponential up and down times, A(t) = A + (1 − A) e^{−kt}, k = r + 1/E[T], so over [0, W]
    Ā = A + (1 − A)(1 − e^{−kW})/(kW). None: the steady state A."""
    a = node_availability(rate_per_node_s, away_s)
    if wall_s is None or away_s <= 0:
        return a
    k = rate_per_node_s + 1.0 / away_s
    return a + (1.0 - a) * -math.expm1(-k * wall_s) / (k * wall_s)


def elastic_goodput(nodes: int, rate_per_node_s: float, away_s: float, tau_s: float, delta_s: float,
                    restart_pause_s: float, load_s: float, work_s: float | None = None,
                    serial_fraction: float = 0.0) -> float:
    """Goodput (work / (N × wall)) of an elastic gang (step 1, no spares, a fleet of exactly its N
    nodes) that shrinks on each failure and grows back when the node returns, first order.

    Its size averages A N (A = node availability). In-service nodes fail at Λ = N r A; each failure
    loses half a checkpoint period of wall compute, (τ+δ)/2, and pauses the job for detection +
    teardown (``restart_pause_s``) and the load R; each return pauses it for a save and a load
    (δ + R). While computing it runs τ per τ + δ:
        goodput = A · τ/(τ+δ) · [1 − Λ ((τ+δ)/2 + restart_pause + R + δ + R)].
    ``work_s``: a run of that much full-size work that starts with every node up uses Ā over its
    wall time W = work / goodput (``mean_availability``; a fixed point, a few iterations).
    ``serial_fraction`` s (Amdahl, fleet_events/elastic.py): the leading A becomes the mean speed
    E[speed(k)]/speed(N) over k ~ Binomial(N, A) nodes up, speed(n) = 1/(s + (1 − s)/n)."""
    def speed(n: int) -> float:
        return 1.0 / (serial_fraction + (1.0 - serial_fraction) / n)

    def mean_speed(a: float) -> float:
        if serial_fraction == 0.0:
            return a
        return sum(math.comb(nodes, k) * a ** k * (1 - a) ** (nodes - k) * speed(k)
                   for k in range(1, nodes + 1)) / speed(nodes)

    def at(a: float) -> float:
        lam = nodes * rate_per_node_s * a
        per_event = (tau_s + delta_s) / 2.0 + restart_pause_s + load_s + delta_s + load_s
        return mean_speed(a) * tau_s / (tau_s + delta_s) * (1.0 - lam * per_event)

    g = at(node_availability(rate_per_node_s, away_s))
    if work_s is not None and g > 0:
        for _ in range(20):
            g = at(mean_availability(rate_per_node_s, away_s, work_s / g))
    return g
