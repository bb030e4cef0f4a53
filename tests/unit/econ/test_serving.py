"""The serving floor, simulated by the engine: reclaim time against a step in traffic."""

from pathlib import Path

import pytest

from gpufleet.econ.serving import (
    ServingSetup,
    compare_designs,
    make_workload,
    replica,
    run_design,
    serving_workload,
)

S = ServingSetup(gpu="H100-80GB", gpus_per_node=8, days=1, start_day=0, headroom_nodes=1, grace_s=30,
                 eviction_s=10, detect_s=15, model_load_s=90, slo_s=120, breach_target=0.01, checkpoint_s=6,
                 checkpoint_interval_s=1800, training_restart_s=300, training_gpus=8, training_hours=6,
                 floor_steps=3)
TRACE = Path(__file__).resolve().parents[4] / "shared/data/alibaba-serving-2025/disaggregated_DLRM_trace.csv"


def step_workload():
    """8 replicas from t = 0 for the whole day, then 4 more at t = 2 h for an hour.
    Peak 12 GPUs → 2 nodes, + 1 headroom node = a 24-GPU pool."""
    jobs = [replica(f"base-{i}", 0.0, 86400.0, "H100-80GB") for i in range(8)]
    jobs += [replica(f"step-{i}", 7200.0, 3600.0, "H100-80GB") for i in range(4)]
    return make_workload(jobs, 0, 86400.0, S)


def test_the_pool_is_the_peak_in_whole_nodes_plus_one_node():
    assert step_workload().pool_gpus == 24


def test_a_dedicated_pool_meets_the_slo_for_every_scale_up():
    """Nothing borrows: each new replica is ready after detect 15 + model load 90 = 105 s < 120 s."""
    d = run_design("dedicated", step_workload(), 24, S, with_training=False)
    assert d.replicas == 4
    assert d.breaches == 0
    assert d.ready_p99_s == pytest.approx(105.0)


def test_in_a_fully_shared_pool_the_engine_reclaims_borrowed_gpus_and_the_step_is_late():
    """Training (8-GPU gangs) fills the 16 idle GPUs. The 4 new replicas find no free GPU; the
    engine's tenancy preemption reclaims one training gang with a 30 s grace, so each replica is
    ready after 15 + 30 + 10 (eviction) + 90 = 145 s > 120 s: all 4 are late."""
    d = run_design("fully shared", step_workload(), 0, S)
    assert d.preemptions >= 1
    assert d.breaches == 4
    assert d.ready_p99_s == pytest.approx(145.0, abs=1.0)
    assert d.training_util > 0


def test_a_floor_that_keeps_the_step_idle_removes_the_breaches_and_keeps_some_borrowing():
    """Floor 16 of 24: lending limit 8, one training gang borrows; serving uses 8, so 16 − 8 = 8
    idle GPUs stay for serving and the 4-replica step lands without a reclaim."""
    d = run_design("floor 16", step_workload(), 16, S)
    assert d.breaches == 0
    assert d.preemptions == 0
    assert d.training_util > 0


def test_compare_designs_reports_the_smallest_floor_meeting_the_target():
    r = compare_designs(step_workload(), S)
    best = r["floor_meeting_target"]
    assert best is not None
    assert best["breach_rate"] <= S.breach_target
    assert all(d["breach_rate"] > S.breach_target for d in r["sweep"] if d["floor"] < best["floor"])


@pytest.mark.skipif(not TRACE.is_file(), reason="the Alibaba 2025 serving trace is not in ../shared")
def test_the_real_trace_window_keeps_the_always_on_instances_out_of_the_simulation():
    """Days 0-1: instances alive through the whole window are the constant base (≈3,000 GPUs,
    the trace's hourly minimum is 3,076); the simulated part is what starts or stops inside."""
    wl = serving_workload(TRACE, S)
    assert 2500 < wl.base_gpus < 3400
    assert 0 < len(wl.serving) < 2000
    assert wl.pool_gpus % 8 == 0


def test_a_checkpoint_longer_than_the_grace_delays_the_reclaimed_replicas_by_the_write():
    """Checkpoint write 60 s > grace 30 s: the engine's notice is 60 s, so each replica of the step
    is ready after 15 + 60 + 10 + 90 = 175 s."""
    from dataclasses import replace

    d = run_design("fully shared", step_workload(), 0, replace(S, checkpoint_s=60))
    assert d.breaches == 4
    assert d.ready_p99_s == pytest.approx(175.0, abs=1.0)


def test_the_reclaim_time_counts_detection_as_the_simulated_ready_time_does():
    """Reference §2.2's chain: detect 15 + max(grace 30, checkpoint 6) + eviction 10 + model load
    90 = 145 s, the ready time the fully shared design measures for a reclaimed replica (above);
    without detection the rule said 130 s. The steepest 10-minute ramp of the step workload is 4
    GPUs (0.00667 GPUs/s): H ≥ ⌈0.00667 × 145⌉ + 1 = 2 GPUs."""
    from gpufleet.econ.serving import reclaim_time

    assert reclaim_time(S) == pytest.approx(145.0)
    assert reclaim_time(S, checkpoint_s=148.8) == pytest.approx(15 + 148.8 + 10 + 90)
    d = run_design("fully shared", step_workload(), 0, S)
    assert d.ready_p99_s == pytest.approx(reclaim_time(S), abs=1.0)
    r = compare_designs(step_workload(), S)
    assert r["reclaim_s"] == pytest.approx(145.0)
    assert r["headroom_rule_gpus"] == 2


def test_the_median_demand_is_taken_over_time_not_over_change_points():
    """1 GPU for 10 h, then 50, 60, 70 for one minute each: over the 4 change points the median is
    55; over time 1 GPU holds 36,000 of 36,180 s (99.5%), so the median is 1. A p99.9 over time
    reaches the spikes: the top 0.1% (36 s) lies inside the last minute, at 70."""
    import numpy as np

    from gpufleet.econ.demand import time_weighted_quantile

    t, v = np.array([0.0, 36000, 36060, 36120]), np.array([1.0, 50, 60, 70])
    assert float(np.median(v)) == 55.0
    assert time_weighted_quantile(t, v, 36180.0, 0.5) == 1.0
    assert time_weighted_quantile(t, v, 36180.0, 0.999) == 70.0
    assert time_weighted_quantile(t, v, 36180.0, 0.0) == 1.0


def test_demand_before_the_first_change_counts_as_zero():
    """Nothing until 3 h, then 8 GPUs for 1 h, over a 4-hour window: 0 for 75% of the time, so
    the median is 0 and the p80 is 8."""
    import numpy as np

    from gpufleet.econ.demand import time_weighted_quantile

    t, v = np.array([10800.0]), np.array([8.0])
    assert time_weighted_quantile(t, v, 14400.0, 0.5) == 0.0
    assert time_weighted_quantile(t, v, 14400.0, 0.8) == 8.0
