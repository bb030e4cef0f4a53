"""Capacity mix: committed, capacity blocks, spot and on-demand GPUs for an hourly demand curve.

**Break-even.** A committed GPU costs c·P every hour of the term (c = committed ÷ on-demand price);
on demand it would cost P in the hours it is used. It pays when its utilisation u > c.

**Marginal argument (newsvendor).** The k-th committed GPU is used exactly in the hours when demand
D exceeds k, a fraction P(D > k) of the time. It saves P·P(D > k) and costs c·P, so commit up to
the level q* where P(D > q*) = c, i.e. q* = F⁻¹(1 − c). With c = 0.5 that is the median (the p50
rule); with c = 0.6 it is the p40, so the p50 rule over-commits when commitments are dearer than
half price and under-commits when cheaper. When overflow can go to a tier cheaper than on-demand
(spot at p_eff), the same argument gives P(D > q*) = c / p_eff for that slice.

**The solve.** One mixed-integer LP over the T hours, solved by HiGHS (scipy.optimize.milp):

    minimise   c·P·T·q + Σ_k B·g·L_k·b_k + P·Σ_t o_t + Σ_n p_eff(n)·P·Σ_t s_nt
    subject to q + g·b_k(t) + o_t + Σ_n s_nt ≥ D_t     (every hour is served)
               0 ≤ s_nt ≤ E_nt                         (only spot-eligible demand on spot)
               q, b_k integers ≥ 0; o_t ≥ 0

with q committed GPUs, b_k capacity-block nodes (g GPUs each) in block window k of L_k hours at B
per GPU-hour, o_t on-demand GPUs and s_nt spot GPUs of gangs of n nodes in hour t. E_nt is the
eligible demand of n-node gangs, and each size pays its own effective price p_eff(n) (econ/spot.py:
one reclaim of any of its n nodes stops all of them, so p_eff grows with n). Pricing every gang at
the one-node price claimed a cost no plan can reach, and never committed for a gang whose p_eff(n)
lies above c: with one 7-node gang at p_eff(7) > c, committing its GPUs is the cheaper plan, and
the MILP now finds it. Only the sizes whose p_eff(n) < 1 get spot variables (the rest never pay).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp

from gpufleet.econ.demand import Demand


@dataclass(frozen=True)
class Prices:
    od: float  # $/GPU-hr
    committed_ratio: float  # c
    block: float  # $/GPU-hr
    block_hours: int
    gpus_per_node: int
    spot_effective: float  # × OD, after checkpoint and restart overheads, for one node (econ/spot.py)
    #: (gang nodes, p_eff × OD) per gang size; a size not listed pays ``spot_effective``.
    spot_by_nodes: tuple[tuple[int, float], ...] = ()

    def spot_price(self, nodes: int) -> float:
        """Effective spot price (× OD) of a gang of ``nodes`` nodes."""
        return dict(self.spot_by_nodes).get(nodes, self.spot_effective)


def spot_classes(demand: Demand, p: Prices, use_spot: bool = True) -> list[tuple[int, np.ndarray, float]]:
    """(nodes, eligible hourly GPUs, p_eff) for each gang size whose spot price beats on demand,
    cheapest first."""
    if not use_spot:
        return []
    out = [(n, e, p.spot_price(n)) for n, e in demand.by_nodes().items() if e.any() and p.spot_price(n) < 1.0]
    return sorted(out, key=lambda c: (c[2], c[0]))


@dataclass
class Mix:
    committed: int
    block_nodes: list[int]
    od_gpu_hours: float
    spot_gpu_hours: float
    block_gpu_hours: float
    committed_gpu_hours: float
    cost: float
    status: str
    solve_s: float
    spot_cost: float = 0.0
    #: spot GPU-hours per gang size (nodes → GPU-hours)
    spot_by_nodes: dict[int, float] = field(default_factory=dict)


@dataclass
class CapacityPlan:
    demand: Demand
    prices: Prices
    mix: Mix
    #: The same MILP with on demand as the only overflow: its committed level is F⁻¹(1 − c).
    od_only: Mix
    all_od_cost: float
    breakeven_utilisation: float
    newsvendor_level: float
    p50: float
    mean: float
    peak: float
    marginal: list[dict] = field(default_factory=list)
    levels: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cost_od_overflow: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cost_spot_overflow: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def cost_at(self, q: float) -> float:
        return float(cost_with_baseline(self.demand, self.prices, np.array([q]), spot=False)[0])

    def as_dict(self) -> dict:
        m = self.mix
        return {
            "demand": {"name": self.demand.name, "hours": self.demand.hours, "mean_gpus": self.mean,
                       "p50_gpus": self.p50, "peak_gpus": self.peak,
                       "spot_eligible_gpu_hours": float(self.demand.eligible.sum())},
            "prices": vars(self.prices),
            "breakeven_utilisation": self.breakeven_utilisation,
            "newsvendor_committed_gpus": self.newsvendor_level,
            "p50_rule": {"committed_gpus": self.p50, "cost_od_overflow": self.cost_at(self.p50)},
            "newsvendor": {"committed_gpus": self.newsvendor_level,
                           "cost_od_overflow": self.cost_at(self.newsvendor_level)},
            "solution": {"committed_gpus": m.committed, "block_nodes_per_window": m.block_nodes,
                         "gpu_hours": {"committed": m.committed_gpu_hours,
                                       "capacity_block": m.block_gpu_hours, "spot": m.spot_gpu_hours,
                                       "on_demand": m.od_gpu_hours},
                         "cost": m.cost, "solver": "HiGHS (scipy.optimize.milp)", "status": m.status,
                         "solve_s": m.solve_s,
                         "costs": {"committed": self.prices.committed_ratio * self.prices.od
                                   * m.committed_gpu_hours,
                                   "capacity_block": self.prices.block * m.block_gpu_hours,
                                   "spot": m.spot_cost, "on_demand": self.prices.od * m.od_gpu_hours},
                         "spot_gpu_hours_by_gang_nodes": {str(k): v for k, v in m.spot_by_nodes.items()}},
            "milp_on_demand_overflow_only": {"committed_gpus": self.od_only.committed,
                                             "cost": self.od_only.cost},
            "all_on_demand_cost": self.all_od_cost,
            "saving_pct": 100.0 * (1 - m.cost / self.all_od_cost) if self.all_od_cost else 0.0,
            "marginal": self.marginal,
            "rules": [{"rule": r.label, "committed_gpus": r.committed, "used_fraction": r.used_fraction,
                       "cost": r.cost, "cost_basis": r.basis} for r in rule_rows(self)],
        }


@dataclass(frozen=True)
class RuleRow:
    label: str
    committed: float
    used_fraction: float
    cost: float
    basis: str


def rule_rows(plan: CapacityPlan) -> list[RuleRow]:
    """The committed-level comparison that the terminal and the HTML page both print, each cost on
    its stated basis: the rules with overflow on demand, each MILP at the cost it solved for."""
    d = plan.demand.gpus
    out = [RuleRow(label, q, float((d > q).mean()), plan.cost_at(q), "overflow on demand")
           for label, q in (("p50 rule (median over time)", plan.p50), ("F⁻¹(1 − c)", plan.newsvendor_level))]
    for label, m, basis in (("MILP, overflow on demand", plan.od_only, "overflow on demand"),
                            ("MILP, all tiers", plan.mix, "the MILP's mix (blocks, spot, on demand)")):
        out.append(RuleRow(label, float(m.committed), float((d > m.committed).mean()), m.cost, basis))
    return out


def newsvendor_level(d: np.ndarray, ratio: float) -> float:
    """Smallest q with P(D > q) ≤ ratio over the hours: the empirical F⁻¹(1 − ratio)."""
    if ratio >= 1.0:
        return 0.0
    s = np.sort(d)
    k = int(np.ceil((1.0 - ratio) * len(s))) - 1
    return float(s[max(0, min(len(s) - 1, k))])


def exceed_fraction(d: np.ndarray, q: float) -> float:
    """Fraction of hours in which demand exceeds q: how often the q-th committed GPU is used."""
    return float((d > q).mean())


def cost_with_baseline(demand: Demand, p: Prices, levels: np.ndarray, spot: bool) -> np.ndarray:
    """Total cost over the window for each committed level q: c·P·T·q + the overflow, on OD, or
    with ``spot`` the eligible part of it on spot: committed capacity covers the dearest demand
    first (ineligible, then the biggest gangs' spot), so the overflow is filled from the cheapest
    gang size upward, each at its own p_eff."""
    d = demand.gpus[None, :]
    q = levels[:, None]
    over = np.maximum(0.0, d - q)
    cost = p.committed_ratio * p.od * demand.hours * levels
    if spot:
        for _, e, price in spot_classes(demand, p):
            take = np.minimum(over, e[None, :])
            cost = cost + price * p.od * take.sum(axis=1)
            over = over - take
    return cost + p.od * over.sum(axis=1)


def solve_mix(demand: Demand, p: Prices, use_blocks: bool = True, use_spot: bool = True) -> Mix:
    """The MILP of the module docstring, solved with HiGHS."""
    t_h = demand.hours
    k_n = -(-t_h // p.block_hours) if use_blocks else 0
    window = np.arange(t_h) // p.block_hours
    hours_in = np.bincount(window, minlength=k_n)[:k_n].astype(float) if k_n else np.zeros(0)
    classes = spot_classes(demand, p, use_spot)
    m = len(classes)
    n = 1 + k_n + (1 + m) * t_h
    cost = np.concatenate([[p.committed_ratio * p.od * t_h], p.block * p.gpus_per_node * hours_in,
                           np.full(t_h, p.od), *[np.full(t_h, price * p.od) for _, _, price in classes]])
    rows = np.arange(t_h)
    a_q = sparse.csr_matrix(np.ones((t_h, 1)))
    a_b = (sparse.csr_matrix((np.full(t_h, float(p.gpus_per_node)), (rows, window)), shape=(t_h, k_n))
           if k_n else sparse.csr_matrix((t_h, 0)))
    eye = sparse.identity(t_h, format="csr")
    a = sparse.hstack([a_q, a_b, eye, *[eye] * m], format="csr")
    ub = np.concatenate([[np.inf], np.full(k_n, np.inf), np.full(t_h, np.inf), *[e for _, e, _ in classes]])
    integrality = np.concatenate([np.ones(1 + k_n), np.zeros((1 + m) * t_h)])
    started = time.perf_counter()
    res = milp(cost, constraints=LinearConstraint(a, lb=demand.gpus, ub=np.inf),
               bounds=Bounds(np.zeros(n), ub), integrality=integrality,
               options={"time_limit": 30.0, "mip_rel_gap": 1e-6})
    took = time.perf_counter() - started
    if res.x is None:
        raise ValueError(f"capacity mix: HiGHS found no solution ({res.message})")
    x = res.x
    q = int(round(x[0]))
    b = [int(round(v)) for v in x[1:1 + k_n]]
    o = x[1 + k_n:1 + k_n + t_h]
    spot_h = {nodes: float(x[1 + k_n + (1 + i) * t_h:1 + k_n + (2 + i) * t_h].sum())
              for i, (nodes, _, _) in enumerate(classes)}
    spot_cost = sum(price * p.od * spot_h[nodes] for nodes, _, price in classes)
    block_h = sum(bk * p.gpus_per_node * h for bk, h in zip(b, hours_in, strict=True))
    return Mix(committed=q, block_nodes=b, od_gpu_hours=float(o.sum()), spot_gpu_hours=sum(spot_h.values()),
               block_gpu_hours=float(block_h), committed_gpu_hours=float(q * t_h), cost=float(res.fun),
               status=res.message, solve_s=took, spot_cost=float(spot_cost), spot_by_nodes=spot_h)


def plan_capacity(demand: Demand, p: Prices, use_blocks: bool = True, use_spot: bool = True) -> CapacityPlan:
    d = demand.gpus
    mix = solve_mix(demand, p, use_blocks, use_spot)
    od_only = solve_mix(demand, p, use_blocks=False, use_spot=False)
    peak = float(d.max())
    levels = np.linspace(0.0, np.ceil(peak), min(400, int(np.ceil(peak)) + 1))
    nv = newsvendor_level(d, p.committed_ratio)
    p50 = float(np.median(d))  # over equal hours: the median over time of the hourly curve
    marginal = []
    for pct in (10, 25, 40, 50, 60, 75, 90):
        q = float(np.percentile(d, pct))
        frac = exceed_fraction(d, q)
        marginal.append({"level": f"p{pct}", "committed_gpus": q, "used_fraction": frac,
                         "pays": frac > p.committed_ratio})
    return CapacityPlan(
        demand=demand, prices=p, mix=mix, od_only=od_only, all_od_cost=float(p.od * d.sum()),
        breakeven_utilisation=p.committed_ratio, newsvendor_level=nv, p50=p50, mean=float(d.mean()),
        peak=peak, marginal=marginal, levels=levels,
        cost_od_overflow=cost_with_baseline(demand, p, levels, spot=False),
        cost_spot_overflow=cost_with_baseline(demand, p, levels, spot=use_spot))
