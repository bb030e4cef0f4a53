"""The reliability questions answered twice — by formula and by simulation — for the report.

1. Recovery: a gang of ``nodes`` nodes (256 = 2,048 GPUs) with the 30-minute and the 3-minute
   recovery; goodput simulated (mean over seeds) beside Daly's expected wall time.
2. Checkpoint cadence: goodput over cadences around Daly's optimum, simulated and by formula.
3. Spares: the pool that keeps P(no spare when needed) < 1% (Palm / Poisson), and the simulated
   shortage with that pool.
Every simulation here runs the real simulator (sim/runner.py) with failures on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gpufleet.model.fleet import Fleet
from gpufleet.policies.registry import profile
from gpufleet.sim import reliability as R
from gpufleet.sim.failures import FAST, SLOW, FailureConfig, Recovery, mean_out_of_service_s
from gpufleet.sim.runner import simulate
from gpufleet.testing.builders import fleet, job

DAY = 86400.0


@dataclass(frozen=True)
class GangRun:
    label: str
    tau_s: float
    recovery_s: float
    goodput_sim: float
    goodput_formula: float
    interruptions: float
    recovery_p95_s: float


def gang_goodput(cfg: FailureConfig, recovery: Recovery, nodes: int, work_days: float, tau_s: float,
                 delta_s: float, seeds: range, spares: int) -> GangRun:
    """Mean simulated goodput (work / wall from first start) of one checkpointing gang."""
    g, ints, p95 = [], [], []
    for seed in seeds:
        c = replace(cfg, recovery=recovery, spares=spares, seed=seed)
        j = (job("gang").gpus(8).gang(nodes).runs(work_days * DAY)
             .checkpoints(tau_s, delta_s, recovery.load_s).build())
        r = simulate(_fleet(nodes + spares), [j], profile("gang-bestfit"), failures=c,
                     failures_until=3 * work_days * DAY, decision_log=False, stranded_every_s=1e12)
        g.append(work_days * DAY / (r.finishes["gang"] - r.starts["gang"]))
        assert r.failures is not None
        ints.append(r.failures.interruptions)
        if r.failures.recoveries_s:
            p95.append(float(np.percentile(r.failures.recoveries_s, 95)))
    mtti = R.job_mtti_s(nodes, cfg.rate_per_node_s(8))
    return GangRun(recovery.name, tau_s, recovery.total_s, float(np.mean(g)),
                   R.daly_goodput(tau_s, delta_s, recovery.total_s, mtti), float(np.mean(ints)),
                   float(np.mean(p95)) if p95 else 0.0)


def _fleet(nodes: int) -> Fleet:
    return fleet().leaves(1, nodes=nodes).build()


def recovery_comparison(cfg: FailureConfig, nodes: int = 256, work_days: float = 28.0, delta_s: float = 30.0,
                        seeds: range = range(6)) -> list[GangRun]:
    mtti = R.job_mtti_s(nodes, cfg.rate_per_node_s(8))
    tau = R.daly_interval_s(delta_s, mtti)
    return [gang_goodput(cfg, rec, nodes, work_days, tau, delta_s, seeds, spares=max(16, nodes // 8))
            for rec in (SLOW, FAST)]


def cadence_curve(cfg: FailureConfig, nodes: int = 64, work_days: float = 10.0, delta_s: float = 60.0,
                  factors: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0),
                  seeds: range = range(3)) -> tuple[float, float, list[GangRun]]:
    """(Young τ, Daly τ, runs at Daly τ × each factor) for a gang of ``nodes`` at ``cfg``'s rate."""
    mtti = R.job_mtti_s(nodes, cfg.rate_per_node_s(8))
    daly = R.daly_interval_s(delta_s, mtti)
    runs = [gang_goodput(cfg, FAST, nodes, work_days, daly * f, delta_s, seeds, spares=nodes)
            for f in factors]
    return R.young_interval_s(delta_s, mtti), daly, runs


@dataclass(frozen=True)
class SparesCheck:
    nodes: int
    failures_per_day: float
    out_of_service_days: float
    spares: int
    p_formula: float
    p_sim: float
    failures_simulated: int
    erlang_b: float


def spares_check(cfg: FailureConfig, nodes: int, years: float = 5.0, risk: float = 0.01) -> SparesCheck:
    """Plan the pool by formula, then simulate ``years`` of failures with it."""
    lam = nodes * cfg.rate_per_node_s(8)
    e_t = mean_out_of_service_s(cfg, 8)
    s = R.spares_needed(lam, e_t, risk)
    T = years * 365 * DAY
    r = simulate(_fleet(nodes + s), [], profile("gang-bestfit"), failures=replace(cfg, spares=s),
                 failures_until=T, horizon=T, decision_log=False, stranded_every_s=1e12)
    led = r.failures
    assert led is not None
    return SparesCheck(nodes, lam * DAY, e_t / DAY, s, R.no_spare_probability(s, lam, e_t),
                       led.no_spare / led.spare_needed if led.spare_needed else 0.0,
                       led.node_failures, R.erlang_b(lam * e_t, s))
