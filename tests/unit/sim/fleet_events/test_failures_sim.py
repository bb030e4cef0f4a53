"""Failures in the simulator, each checked against its formula (studies/reliability.py) within 5%."""

from __future__ import annotations

import numpy as np
import pytest

from gpufleet.model.health import StepDurations
from gpufleet.policies.registry import profile
from gpufleet.sim.fleet_events.failures import (
    FAST,
    LLAMA3_KINDS,
    SLOW,
    FailureConfig,
    FailureKind,
    mean_out_of_service_s,
)
from gpufleet.sim.runner import simulate
from gpufleet.studies import reliability as R
from gpufleet.testing.builders import fleet, job

DAY = 86400.0


def test_the_failure_kinds_add_up_to_llama3s_419_interruptions():
    """Table 5: 419 unexpected interruptions on 2,048 nodes in 54 days = 3.789 per 1000 node-days."""
    assert sum(k.count for k in LLAMA3_KINDS) == 419
    per_1000_node_days = FailureConfig().rate_per_node_s(8) * DAY * 1000
    assert per_1000_node_days == pytest.approx(419 / 110.592, rel=1e-9)


def _gang_goodput(recovery, seeds=range(4), nodes=64, scale=20.0, delta=60.0):
    """A 64-node gang, 10 days of work, failures at 20× the Llama 3 rate (enough events to measure:
    M = 1/(64 × 20 × 3.789e-3 per day) = 4.95 h), 64 hot spares, Daly's interval."""
    goodputs = []
    cfg = FailureConfig(recovery=recovery, spares=64, scale=scale)
    mtti = R.job_mtti_s(nodes, cfg.rate_per_node_s(8))
    tau = R.daly_interval_s(delta, mtti)
    for seed in seeds:
        cfg = FailureConfig(recovery=recovery, spares=64, scale=scale, seed=seed)
        j = job("big").gpus(8).gang(nodes).runs(10 * DAY).checkpoints(tau, delta, recovery.load_s).build()
        r = simulate(fleet().leaves(1, nodes=nodes + 64).build(), [j], profile("gang-bestfit"),
                     failures=cfg, failures_until=30 * DAY, horizon=30 * DAY)
        goodputs.append(10 * DAY / (r.finishes["big"] - r.starts["big"]))
    return float(np.mean(goodputs)), R.daly_goodput(tau, delta, recovery.total_s, mtti), r


@pytest.mark.parametrize("recovery", [SLOW, FAST], ids=lambda r: r.name)
def test_gang_goodput_matches_dalys_expected_wall_time_within_5_percent(recovery):
    """Daly: T_s/T_w = τ / (M e^{R/M} (e^{(τ+δ)/M} − 1)); with M = 4.95 h, δ = 60 s, τ = 1,422 s:
    R = 1,800 s gives 0.832, R = 180 s gives 0.911. The simulated waste (1 − goodput) is held to
    5% too: that is the part failures cost. Most recoveries take exactly the budget; a second
    failure during one (another node, another spare) makes it longer, never shorter."""
    sim, daly, r = _gang_goodput(recovery)
    assert sim == pytest.approx(daly, rel=0.05)
    assert 1 - sim == pytest.approx(1 - daly, rel=0.05)
    # the report's first-order form, 1 − (δ/τ + (τ+δ)/2M + R/M): 0.815 (30-minute), 0.906 (3-minute)
    mtti = R.job_mtti_s(64, FailureConfig(scale=20.0).rate_per_node_s(8))
    tau = R.daly_interval_s(60.0, mtti)
    assert sim == pytest.approx(1 - R.first_order_waste(tau, 60.0, recovery.total_s, mtti), rel=0.05)
    rec = np.array(r.failures.recoveries_s)
    assert np.median(rec) == pytest.approx(recovery.total_s) and rec.min() == pytest.approx(recovery.total_s)


def test_recovery_time_is_detection_teardown_replacement_and_checkpoint_load():
    """30-minute: 600 + 300 + 300 + 600 = 1,800 s; 3-minute: 30 + 30 + 60 + 60 = 180 s."""
    assert SLOW.total_s == 1800 and FAST.total_s == 180


def test_the_simulated_goodput_curve_peaks_near_dalys_interval():
    """Cadences ¼τ*, τ*, 4τ* around Daly's τ* = 1,422 s: the simulation ranks τ* best and each point
    is within 5% of Daly's formula."""
    cfg = FailureConfig(recovery=FAST, spares=64, scale=20.0)
    mtti = R.job_mtti_s(64, cfg.rate_per_node_s(8))
    best = R.daly_interval_s(60.0, mtti)
    sims = {}
    for factor in (0.25, 1.0, 4.0):
        tau = best * factor
        g = []
        for seed in range(3):
            c = FailureConfig(recovery=FAST, spares=64, scale=20.0, seed=seed)
            j = job("big").gpus(8).gang(64).runs(10 * DAY).checkpoints(tau, 60.0, FAST.load_s).build()
            r = simulate(fleet().leaves(1, nodes=128).build(), [j], profile("gang-bestfit"),
                         failures=c, failures_until=30 * DAY)
            g.append(10 * DAY / (r.finishes["big"] - r.starts["big"]))
        sims[factor] = float(np.mean(g))
        assert sims[factor] == pytest.approx(R.daly_goodput(tau, 60.0, FAST.total_s, mtti), rel=0.05)
    assert max(sims, key=sims.get) == 1.0


def test_the_same_seed_gives_the_same_failures_whatever_the_policy():
    f = fleet().leaves(2, nodes=8).build()
    jobs = [job(f"j{i}").gpus(8).gang(1 + i % 4).at(600.0 * i).runs(7200).checkpoints(1800, 10, 60).build()
            for i in range(30)]
    cfg = FailureConfig(scale=400.0, seed=5)
    faults = []
    for policy in ("gang-bestfit", "gang-easy"):
        r = simulate(f, jobs, profile(policy), failures=cfg, failures_until=2 * DAY, horizon=2 * DAY)
        faults.append([(t, node, d) for t, k, node, d in r.recorder.log if k == "node-fault"])
    assert faults[0] and faults[0] == faults[1]


#: Quick repairs (diagnose 60 s, fix 600 s, RMA 1 h, gate 60 s) so that nodes are back long before
#: the next failure even at 100–800× the Llama 3 rate: the gang's exposure is running time.
QUICK = StepDurations(diagnose_s=60, repair_s=600, rma_s=3600, preflight_s=60)


def _interruptions(n: int, scale: float, seeds: range) -> tuple[int, float, float]:
    """(interruptions, hours of running, expected n r per hour) of a gang of n nodes, 600 h of
    work per seed. Exposure is the time each run computed (start to finish, or to its failure)."""
    failures, exposure = 0, 0.0
    for seed in seeds:
        cfg = FailureConfig(scale=scale, seed=seed, spares=8, steps=QUICK)
        j = job("g").gpus(8).gang(n).runs(600 * 3600).checkpoints(600, 1, 10).build()
        r = simulate(fleet().leaves(1, nodes=n + 8).build(), [j], profile("gang-bestfit"), failures=cfg,
                     failures_until=120 * DAY, decision_log=False, stranded_every_s=1e12)
        began = None
        for t, kind, jid, _ in r.recorder.log:
            if jid != "g":
                continue
            if kind == "start":
                began = t
            elif kind in ("failed", "finish") and began is not None:
                exposure += t - began
                began = None
                failures += kind == "failed"
    return failures, exposure / 3600, n * cfg.rate_per_node_s(8) * 3600


def test_a_gang_of_n_nodes_is_interrupted_n_times_as_often_per_hour_of_running():
    """At 100× the Llama 3 rate a node fails r = 100 × 3.789e-3 per day = 0.01579 per hour. A gang
    of 32 at 100× is interrupted n r = 32 × 0.01579 = 0.505 times per running hour; a gang of 4 at
    800× as often, 4 × 8 × 0.01579 = 0.505 (equal counts, equal noise). Given the hours run, the
    count is Poisson(n r × hours) — its exact variance is its mean — so each count is held to
    3σ = 3√expected (≈ 10% at the ≈ 950 interruptions of 3 seeds). Per unit of scale the gang of 32
    is hit 32/4 = 8 times as often as the gang of 4, held to 3σ of the two counts combined
    (σ = 8 √(1/c₄ + 1/c₃₂) ≈ 4.6%). The slow test below runs 12 seeds (≈ 3,800 each, 3σ = 4.9%) and
    holds each rate to 5%."""
    per = {}
    for n, scale in ((4, 800.0), (32, 100.0)):
        count, hours, nr = _interruptions(n, scale, range(3))
        expected = nr * hours
        assert abs(count - expected) <= 3 * expected ** 0.5, (n, count, expected)
        per[n] = (count / hours / scale, count)
    ratio = per[32][0] / per[4][0]
    sigma = 8.0 * (1 / per[32][1] + 1 / per[4][1]) ** 0.5
    assert abs(ratio - 8.0) <= 3 * sigma


@pytest.mark.slow
def test_a_gangs_interruption_rate_is_n_times_the_node_rate_within_5_percent():
    """As above with 12 seeds: ≈ 3,800 interruptions per gang size, Poisson σ = 1.6%, so 5% is 3σ.
    Measured 1.003 and 0.997 of n r. (Slow: 16 s of CPU, ≈ 55 s wall on the shared 2-core machine.)"""
    for n, scale in ((4, 800.0), (32, 100.0)):
        count, hours, nr = _interruptions(n, scale, range(12))
        assert count > 3500
        assert count / hours == pytest.approx(nr, rel=0.05)


def test_nodes_away_for_repair_and_no_spare_probability_match_palms_theorem():
    """2,048 nodes, one failure kind at the Llama 3 rate (Λ = 2048 × 3.789e-3 = 7.76 per day),
    repaired in a day (E[T] = 30+60+0+900+86,400+120 s = 1.0128 d): on average Λ E[T] = 7.86 nodes
    away, and a failure finds none of 10 spares left with P(Poisson(7.86) ≥ 10) = 0.266. A year
    simulated: both within 5%."""
    kind = FailureKind("any", 419, False, 0.0, "all")
    cfg = FailureConfig(kinds=(kind,), steps=StepDurations(repair_s=DAY), spares=10, seed=3)
    T = 365 * DAY
    r = simulate(fleet().leaves(1, nodes=2048).build(), [], profile("gang-bestfit"), failures=cfg,
                 failures_until=T, horizon=T, stranded_every_s=1e12)
    led = r.failures
    ts = np.array([a[0] for a in led.away] + [T])
    away = np.array([a[1] for a in led.away])
    lam = 2048 * cfg.rate_per_node_s(8)
    e_t = mean_out_of_service_s(cfg, 8)
    assert float((np.diff(ts) * away).sum() / T) == pytest.approx(lam * e_t, rel=0.05)
    assert led.no_spare / led.spare_needed == pytest.approx(R.no_spare_probability(10, lam, e_t), rel=0.05)


def test_the_planned_spare_count_keeps_the_simulated_shortage_under_one_percent():
    """Same fleet: P(N ≥ 15) = 1.50%, P(N ≥ 16) = 0.70% (Poisson mean 7.86): 16 spares; the
    simulated shortage stays below 1%."""
    kind = FailureKind("any", 419, False, 0.0, "all")
    base = FailureConfig(kinds=(kind,), steps=StepDurations(repair_s=DAY))
    lam, e_t = 2048 * base.rate_per_node_s(8), mean_out_of_service_s(base, 8)
    s = R.spares_needed(lam, e_t)
    assert s == 16
    cfg = FailureConfig(kinds=(kind,), steps=StepDurations(repair_s=DAY), spares=s, seed=4)
    r = simulate(fleet().leaves(1, nodes=2048).build(), [], profile("gang-bestfit"), failures=cfg,
                 failures_until=365 * DAY, stranded_every_s=1e12)
    assert r.failures.no_spare / r.failures.spare_needed < 0.01


def test_a_preflight_gate_trades_node_minutes_for_failed_gang_starts():
    """30% of repaired nodes come back bad. No gate: every bad node fails a gang start. A 2-minute
    gate that catches 70% lets through about 0.3 × as many; a 1-hour gate catching 95% about 0.05 ×.
    The job loses least with the long gate, but its hours of idle nodes make the 2-minute gate the
    cheapest in total GPU-hours (measured: 5,137 / 4,254 / 4,862)."""
    from gpufleet.studies.reliability_study import preflight_payoff

    none, short, long_ = preflight_payoff()
    assert none.caught == 0 and none.admitted_bad > 20
    assert short.admitted_bad == pytest.approx(0.3 * (short.caught + short.admitted_bad), abs=4)
    assert none.lost_gpu_hours > short.lost_gpu_hours > long_.lost_gpu_hours
    total = [g.lost_gpu_hours + g.gate_gpu_hours for g in (none, short, long_)]
    assert min(total) == total[1]


def test_a_node_the_fleet_marks_down_stays_out_of_service_through_failures():
    """The simulator's health book starts each node where its fleet label puts it (model/health.py:
    down enters quarantined). A failure drawn on a node already out of service is ignored, so the
    node never reaches PASSED and the engine never gets it back. Before, the book started every
    node healthy: a failure on the down node walked it through repair and pre-flight into service.
    One 8-GPU node, down; failures at 1000× the Llama 3 rate (≈ 3.8 per node-day) for 10 days; a
    job that needs the whole node must never start."""
    from dataclasses import replace

    from gpufleet.model.fleet import NodeHealth

    f = fleet().leaves(1, nodes=1).build()
    f = replace(f, nodes=tuple(replace(n, health=NodeHealth.DOWN) for n in f.nodes))
    j = job("needs-the-node").gpus(8).runs(3600).build()
    r = simulate(f, [j], profile("gang-bestfit"), failures=FailureConfig(scale=1000.0, seed=1),
                 failures_until=10 * DAY, horizon=10 * DAY)
    assert r.failures.node_failures == 0 and "needs-the-node" not in r.starts
