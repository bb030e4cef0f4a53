"""Spot arithmetic for the capacity mix: checkpoint interval, overhead, effective price, gang rule.

Notation (minutes unless stated): δ checkpoint write time, M mean time between interruptions of
the whole job, R restart time (reprovision + load checkpoint + warm-up), τ compute between
checkpoints.

* Young (CACM 1974): τ ≈ √(2δM).
* Daly (FGCS 2006): τ = √(2δM)·[1 + ⅓·√(δ/2M) + ⅑·(δ/2M)] − δ for δ < 2M, else τ = M.
* Overhead fraction (first order): δ/τ + (τ/2 + R)/M — a checkpoint every τ, and per interruption
  half an interval of lost work plus the restart.
* The notice: when the checkpoint write fits in the reclaim notice (δ ≤ notice), the job saves at
  the notice and loses only the notice and the restart, (notice + R)/M per unit time; periodic
  checkpoints then buy nothing against reclaims, so τ = ∞ and the δ/τ term vanishes. This is what
  the simulator does (fleet_events/spot.py; sim/reliability.spot_waste_noticed_s). AWS's 2-minute notice
  covers the default 1-minute write: overhead (2 + 10)/240 = 5.0% on one node, not 13.3%.
* Effective price: p_eff = p_spot / (1 − overhead) (price per unit of useful work, × OD).
* A gang of n nodes each interrupted independently at MTBI M_node is interrupted at M_node / n:
  n times as often, and each time the whole gang restarts. So p_eff grows with n, and above the
  largest n with p_eff < (the price it would otherwise pay), the gang belongs off spot: the
  never-on-spot rule for big gangs.

The interval formulas and the waste per reclaim (τ/2 + R) are the simulator's own
(studies/reliability.py): the spot reclaims the simulator runs (fleet_events/failures.py, issue 13)
are checked against exactly these, within 5% (tests/unit/sim/fleet_events/test_failures_sim.py),
so the capacity planner's spot price rests on a simulated model, not on a second copy of the arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpufleet.studies.reliability import (
    daly_interval_s,
    spot_waste_noticed_s,
    spot_waste_per_reclaim_s,
)


def daly_interval(delta: float, mtbi: float) -> float:
    """Daly's interval (studies/reliability.py); 0 when checkpoints cost nothing."""
    return 0.0 if delta <= 0 else daly_interval_s(delta, mtbi)


def overhead_fraction(delta: float, restart: float, mtbi: float, tau: float) -> float:
    """Share of paid time that is not useful work, δ/τ + (τ/2 + R)/M, capped at 1: the checkpoint
    writes, and per interruption the simulator's waste per reclaim."""
    ckpt = delta / tau if tau > 0 else 0.0
    return min(1.0, ckpt + spot_waste_per_reclaim_s(tau, restart) / mtbi)


@dataclass(frozen=True)
class SpotEconomics:
    nodes: int
    mtbi_min: float
    tau_min: float  # inf: no periodic checkpoint, the job saves in the notice
    overhead: float
    effective_price: float  # × on-demand; inf when nothing useful gets done
    saves_in_notice: bool = False


def spot_economics(price_ratio: float, delta_min: float, restart_min: float, node_mtbi_min: float,
                   nodes: int = 1, notice_min: float = 0.0) -> SpotEconomics:
    """Effective spot price of a gang of ``nodes`` nodes: Daly interval and first-order overhead,
    or, when the write fits in the notice, (notice + R)/M with no periodic checkpoint."""
    mtbi = node_mtbi_min / max(1, nodes)
    if delta_min <= notice_min:
        ov = min(1.0, spot_waste_noticed_s(notice_min, restart_min) / mtbi)
        eff = price_ratio / (1.0 - ov) if ov < 1.0 else math.inf
        return SpotEconomics(nodes, mtbi, math.inf, ov, eff, saves_in_notice=True)
    tau = daly_interval(delta_min, mtbi)
    ov = overhead_fraction(delta_min, restart_min, mtbi, tau)
    eff = price_ratio / (1.0 - ov) if ov < 1.0 else math.inf
    return SpotEconomics(nodes, mtbi, tau, ov, eff)


def largest_spot_gang(price_ratio: float, delta_min: float, restart_min: float, node_mtbi_min: float,
                      against: float = 1.0, max_nodes: int = 4096, notice_min: float = 0.0) -> int:
    """The largest gang (in nodes) whose effective spot price is below ``against`` (× OD); 0 when
    even one node does not pay. Overhead grows with n, so the first failure ends the search."""
    best = 0
    for n in range(1, max_nodes + 1):
        e = spot_economics(price_ratio, delta_min, restart_min, node_mtbi_min, n, notice_min)
        if e.effective_price < against:
            best = n
        else:
            break
    return best
