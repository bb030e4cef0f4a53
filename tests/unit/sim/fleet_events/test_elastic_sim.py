"""Elastic gangs (fleet_events/elastic.py): shrink on a failure, grow back by gang delta — worked by hand."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.model.health import StepDurations
from gpufleet.policies.registry import profile
from gpufleet.sim.fleet_events.failures import FAST, FailureConfig
from gpufleet.sim.runner import simulate
from gpufleet.testing.builders import fleet, job

#: detect 30 + drain 60 + diagnose 900 + repair in place 14,400 + pre-flight 120 = 15,510 s away.
AWAY = StepDurations().out_of_service_s()


def _one_failure(b, nodes: int = 4):
    """One failure of node 0 at t = 5,000 s, no spares, the 3-minute recovery (detect 30 + teardown
    30 s); 10 h of work at full size, a checkpoint every hour (δ = 0), reload 60 s."""
    j = b.gpus(8).gang(4).runs(36_000).checkpoints(3600, 0, 60).build()
    cfg = FailureConfig(scale=0.0, recovery=FAST, scripted=((5000.0, 0),))
    return simulate(fleet().leaves(1, nodes=nodes).build(), [j], profile("gang-bestfit"), failures=cfg,
                    failures_until=1e5)


def test_the_away_time_of_a_node_repaired_in_place_is_the_sum_of_its_steps():
    assert AWAY == 15_510


def test_an_elastic_gang_shrinks_keeps_running_and_grows_back_when_the_node_returns():
    """At 5,000 s the job has 5,000 s of work, saved 3,600. At 5,060 s (detection + teardown) it
    restarts on 3 of 4 nodes: reload 60 s, then 3/4 speed: by 20,510 s (the node is back: 5,000 +
    15,510) it has 3,600 + (20,510 − 5,060 − 60) × 3/4 = 15,142.5 s of full-size work. It grows
    back to 4 (one gang delta of 1 pod; δ = 0, reload 60 s) and finishes the other 20,857.5 s at
    20,510 + 60 + 20,857.5 = 41,427.5 s."""
    r = _one_failure(job("e").elastic(2))
    kinds = [(k, jid) for _, k, jid, _ in r.recorder.log if jid == "e"]
    assert ("shrink", "e") in kinds and ("grow", "e") in kinds and ("stopped", "e") not in kinds
    assert r.finishes["e"] == pytest.approx(41_427.5)
    led = r.failures
    assert (led.elastic_shrinks, led.elastic_grows, led.interruptions) == (1, 1, 1)
    # lost: 32 GPUs × (1,400 s of work + 60 s pause) + 24 GPUs × 60 s reload; grow: 32 × 60 s reload
    assert led.lost_gpu_s["gpu-xid"] == pytest.approx(32 * 1460 + 24 * 60)
    assert led.lost_gpu_s["elastic-grow"] == pytest.approx(32 * 60)
    assert led.recoveries_s == [pytest.approx(120.0)]


def test_a_rigid_gang_waits_for_the_node_and_restarts_from_its_checkpoint():
    """Same failure, no spare: the gang waits until 20,510 s, reloads 60 s and redoes the 32,400 s
    left after its 3,600-s checkpoint: 52,970 s — 11,542.5 s later than the elastic job."""
    assert _one_failure(job("r")).finishes["r"] == pytest.approx(52_970)


def test_an_elastic_gang_whose_minimum_is_its_size_stops_like_a_rigid_one():
    r = _one_failure(job("m").elastic(4))
    assert r.finishes["m"] == pytest.approx(52_970)
    assert "shrink" not in {k for _, k, _, _ in r.recorder.log}


def test_a_spare_node_lets_the_gang_grow_back_at_once():
    """A fifth node, free: the gang shrinks at 5,060 s and its delta lands on node 4 in the same
    cycle: 3,600 s saved, reload 60 (shrink) then reload 60 (grow): finish 5,060 + 60 + 32,400 = 37,520 s
    (the shrink's zero-length segment does no work)."""
    r = _one_failure(job("s").elastic(2), nodes=5)
    assert r.finishes["s"] == pytest.approx(37_520)


def test_growing_back_uses_whole_dp_replicas_of_step_pods():
    """step 2 (a DP replica is 2 pods): losing 1 of 4 pods drops to 2 — the min + j·step at or below 3."""
    r = _one_failure(job("d").elastic(2, step=2))
    shrink = [d for _, k, jid, d in r.recorder.log if k == "shrink"]
    assert shrink and "4 → 2 replicas" in shrink[0]
    grows = [d for _, k, jid, d in r.recorder.log if k == "grow"]
    assert grows and "2 → 4 replicas" in grows[0]
    assert r.failures.elastic_grows == 1


def test_elastic_goodput_matches_the_availability_formula_within_5_percent():
    """16 nodes, no spares, one failure kind at 100× the Llama 3 rate (r = 0.3789 per node-day),
    repaired in a day: E[T] = 30 + 60 + 900 + 86,400 + 120 = 87,510 s = 1.0128 d, r E[T] = 0.3838,
    availability A = 1/1.3838 = 0.7227. In-service failures Λ = 16 × 0.3789 × 0.7227 = 4.381 per
    day; each costs (τ+δ)/2 + 60 + R + (grow) δ + R = 915 + 60 + 60 + 30 + 60 = 1,125 s:
    goodput = 0.7227 × 1800/1830 × (1 − 4.381/86,400 × 1,125) = 0.6703 in the steady state. The run
    starts with every node up: over its W ≈ 30 d, Ā = A + (1 − A)(1 − e^{−kW})/(kW) with k = r +
    1/E[T] = 1.37 per day: 0.7294, goodput 0.6762. Simulated (4 seeds × 20 days of work;
    seed-to-seed spread 1.6%, so the mean's is 0.8%): 0.675 — within 5% (6σ). The rigid gang on
    the same 16 nodes waits a day for every repair: goodput 0.09."""
    from gpufleet.sim.fleet_events.failures import FailureKind, mean_out_of_service_s
    from gpufleet.studies import reliability as R

    kind = FailureKind("any", 419, False, 0.0, "all")
    day = 86400.0
    g = {True: [], False: []}
    for elastic in (True, False):
        for seed in range(4 if elastic else 1):
            cfg = FailureConfig(kinds=(kind,), scale=100.0, steps=StepDurations(repair_s=day), seed=seed)
            b = job("e").gpus(8).gang(16).runs(20 * day).checkpoints(1800, 30, 60)
            r = simulate(fleet().leaves(1, nodes=16).build(), [(b.elastic(1) if elastic else b).build()],
                         profile("gang-bestfit"), failures=cfg, failures_until=200 * day,
                         decision_log=False, stranded_every_s=1e12)
            g[elastic].append(20 * day / (r.finishes["e"] - r.starts["e"]))
    rate, e_t = cfg.rate_per_node_s(8), mean_out_of_service_s(cfg, 8)
    formula = R.elastic_goodput(16, rate, e_t, 1800, 30, FAST.detect_s + FAST.teardown_s, 60)
    assert formula == pytest.approx(0.6703, abs=0.0005)
    run = R.elastic_goodput(16, rate, e_t, 1800, 30, 60, 60, work_s=20 * day)
    assert run == pytest.approx(0.6762, abs=0.0005)
    assert sum(g[True]) / 4 == pytest.approx(run, rel=0.05)
    assert max(g[False]) < 0.2


@pytest.mark.parametrize("lo,step", [(0, 1), (5, 1), (1, 2), (2, 0)])
def test_an_elastic_range_outside_the_gang_is_refused(lo, step):
    """A gang of 4: min 0 or 5 is outside it; 4 − 1 = 3 is no multiple of 2; a step of 0 never grows."""
    with pytest.raises(ValueError, match="elastic range"):
        job("x").gang(4).elastic(lo, step).build()


def test_the_summary_counts_shrinks_grows_and_hours_below_full_size():
    """The worked example: size 3 from 5,060 s to 20,510 s = 15,450 s = 4.29 h below full size;
    goodput = 36,000 s of work / 41,427.5 s from start to finish = 86.90%."""
    from gpufleet.sim.metrics import summarize

    s = summarize(_one_failure(job("e").elastic(2)))
    assert (s["elastic_shrinks"], s["elastic_grows"]) == (1, 1)
    assert s["elastic_hours_below_full_size"] == pytest.approx(15_450 / 3600)
    assert s["goodput_pct"] == pytest.approx(100 * 36_000 / 41_427.5)


@settings(max_examples=25, deadline=None)
@given(fails=st.lists(st.tuples(st.floats(0, 40_000), st.integers(0, 5)), max_size=8),
       spares=st.integers(0, 1))
def test_every_job_finishes_and_every_gpu_comes_back_whatever_fails(fails, spares):
    """Elastic and rigid gangs on 6 nodes under any failure script: all jobs end, nothing is held
    at the end, and no instant ever holds more GPUs than the fleet has."""
    jobs = [job("e1").gpus(8).gang(3).elastic(1).runs(20_000).checkpoints(1800, 10, 30).build(),
            job("e2").gpus(8).gang(2).elastic(1).runs(15_000).at(100).checkpoints(1800, 10, 30).build(),
            job("r").gpus(8).gang(1).runs(9_000).at(200).checkpoints(1800, 10, 30).build()]
    cfg = FailureConfig(scale=0.0, recovery=FAST, scripted=tuple(fails), spares=spares,
                        steps=StepDurations(repair_s=600.0))
    r = simulate(fleet().leaves(1, nodes=6).build(), jobs, profile("gang-bestfit"), failures=cfg,
                 failures_until=1e5)
    assert set(r.finishes) == {"e1", "e2", "r"}
    assert max(r.recorder.allocated) <= 48 and r.recorder.allocated[-1] == 0
    assert all(r.finishes[j.id] - r.starts[j.id] >= j.run_time for j in jobs)


def _scenario(**extra):
    from gpufleet.sim.scenario import parse_scenario

    data = {"name": "e", "fleet": {"groups": [{"nodes": 4, "gpu": "H100-80GB", "gpus_per_node": 8}]},
            "workload": {"jobs": [{"id": "t", "replicas": 4, "gpus": 8, "run_time": 3600, **extra}]}}
    return parse_scenario(data, "e.yaml")


def test_a_scenario_job_with_min_replicas_is_elastic_and_a_bad_range_is_one_clear_error():
    from gpufleet.model.errors import InputError

    (j,) = _scenario(min_replicas=2, replica_step=2).jobs()
    assert j.elastic is not None and (j.elastic.min_replicas, j.elastic.step) == (2, 2)
    assert _scenario().jobs()[0].elastic is None
    for bad in ({"min_replicas": 5}, {"min_replicas": 1, "replica_step": 2}, {"min_replicas": 0}):
        with pytest.raises(InputError, match="min_replicas|replica_step"):
            _scenario(**bad)


@settings(max_examples=20, deadline=None)
@given(fails=st.lists(st.tuples(st.floats(0, 30_000), st.integers(0, 7)), max_size=6),
       wave=st.integers(1, 4), start=st.floats(0, 20_000), seed=st.integers(0, 50),
       zone_events=st.sampled_from([0.0, 6.0]))
def test_elastic_gangs_survive_failures_spot_zone_events_and_an_upgrade_together(fails, wave, start, seed,
                                                                                 zone_events):
    """Everything at once on 8 nodes (4 of them spot, two zones): every job still ends, no instant
    holds more GPUs than the fleet, and nothing is held at the end."""
    from gpufleet.sim.fleet_events.failures import SpotConfig
    from gpufleet.sim.fleet_events.upgrade import UpgradeConfig

    jobs = [job("e1").gpus(8).gang(4).elastic(2, 2).runs(20_000).checkpoints(1800, 10, 30).build(),
            job("e2").gpus(8).gang(3).elastic(1).runs(15_000).at(100).checkpoints(900, 10, 30).build(),
            job("r").gpus(8).gang(2).runs(9_000).at(200).checkpoints(1800, 10, 30).build()]
    spot = SpotConfig(nodes=4, reclaims_per_node_day=2.0, away_s=1800.0, zone_events_per_day=zone_events)
    cfg = FailureConfig(scale=0.0, recovery=FAST, scripted=tuple(fails), seed=seed, spot=spot,
                        steps=StepDurations(repair_s=600.0),
                        upgrade=UpgradeConfig(wave=wave, start_s=start, node_fail_p=0.1))
    f = fleet().leaves(1, nodes=2, zone="a").leaves(1, nodes=2, zone="b").leaves(1, nodes=4).build()
    r = simulate(f, jobs, profile("gang-bestfit"), failures=cfg, failures_until=2e5)
    assert set(r.finishes) == {"e1", "e2", "r"}
    assert max(r.recorder.allocated) <= 64 and r.recorder.allocated[-1] == 0
    assert all(r.finishes[j.id] - r.starts[j.id] >= j.run_time for j in jobs)


def test_an_amdahl_serial_fraction_slows_a_shrunk_gang_less_than_linearly():
    """The one-failure case with s = 0.1: speed(n) = 1/(0.1 + 0.9/n), speed(3)/speed(4) =
    2.5/3.0769 = 0.8125 (linear: 0.75). By 20,510 s it has 3,600 + (20,510 − 5,060 − 60) × 0.8125
    = 16,104.375 s of full-size work; grown back, it finishes the other 19,895.625 s at
    20,510 + 60 + 19,895.625 = 40,465.625 s (linear: 41,427.5 s)."""
    r = _one_failure(job("e").elastic(2, serial_fraction=0.1))
    assert r.finishes["e"] == pytest.approx(40_465.625)


def test_the_elastic_goodput_formula_with_a_serial_fraction_matches_the_simulation_within_5_percent():
    """The availability test's gang (16 nodes, 100× Llama 3, repaired in a day) with s = 0.2: the
    leading A of the formula becomes the mean speed over k ~ Bin(16, Ā) nodes up, E[speed(k)] /
    speed(16) with speed(n) = 1/(0.2 + 0.8/n) — above Ā = 0.729 since a shrunk gang keeps more than
    k/16 of its speed. Simulated over 4 seeds × 20 days of work, within 5%; and above the linear
    gang's goodput (0.676)."""
    from gpufleet.sim.fleet_events.failures import FailureKind, mean_out_of_service_s
    from gpufleet.studies import reliability as R

    kind = FailureKind("any", 419, False, 0.0, "all")
    day = 86400.0
    g = []
    for seed in range(4):
        cfg = FailureConfig(kinds=(kind,), scale=100.0, steps=StepDurations(repair_s=day), seed=seed)
        j = job("e").gpus(8).gang(16).runs(20 * day).checkpoints(1800, 30, 60).elastic(1, serial_fraction=0.2)
        r = simulate(fleet().leaves(1, nodes=16).build(), [j.build()], profile("gang-bestfit"), failures=cfg,
                     failures_until=200 * day, decision_log=False, stranded_every_s=1e12)
        g.append(20 * day / (r.finishes["e"] - r.starts["e"]))
    rate, e_t = cfg.rate_per_node_s(8), mean_out_of_service_s(cfg, 8)
    run = R.elastic_goodput(16, rate, e_t, 1800, 30, 60, 60, work_s=20 * day, serial_fraction=0.2)
    assert run > 0.8
    assert sum(g) / 4 == pytest.approx(run, rel=0.05)


def test_a_scenario_gives_an_elastic_gang_its_serial_fraction_and_refuses_one_without_min_replicas():
    from gpufleet.model.errors import InputError
    from gpufleet.sim.scenario import parse_scenario

    def scn(**extra):
        return parse_scenario({"fleet": {"name": "f", "groups": [{"nodes": 4, "gpu": "H100-80GB",
                                                                   "gpus_per_node": 8}]},
                               "workload": {"jobs": [{"id": "e", "gpus": 8, "replicas": 4, "run_time": 10,
                                                      **extra}]}}, "s.yaml")
    assert scn(min_replicas=2, elastic_serial_fraction=0.1).jobs()[0].elastic.serial_fraction == 0.1
    for bad in ({"elastic_serial_fraction": 0.1}, {"min_replicas": 2, "elastic_serial_fraction": 1.0},
                {"min_replicas": 2, "elastic_serial_fraction": float("nan")}):
        with pytest.raises(InputError, match="workload.jobs"):
            scn(**bad)
