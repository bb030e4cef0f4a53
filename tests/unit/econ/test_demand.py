"""Demand curves: hourly means of step functions and job runs, and the spot-eligible part."""

import numpy as np
import pytest

from gpufleet.econ.demand import hourly_mean, interval_demand, read_trace
from gpufleet.model.job import JobKind
from gpufleet.testing.builders import job
from gpufleet.traces.jsonl import write_jobs


def test_hourly_mean_weights_each_value_by_the_time_it_holds():
    """10 GPUs for 30 min then 20 GPUs for 90 min: hour 0 = (10 × 0.5 + 20 × 0.5) = 15; hour 1 = 20."""
    out = hourly_mean(np.array([0.0, 1800.0]), np.array([10.0, 20.0]), 7200.0)
    assert out.tolist() == pytest.approx([15.0, 20.0])


def test_overlapping_runs_add_up():
    """Runs (0–2 h, 4 GPUs) and (1–3 h, 8 GPUs): hours hold 4, 12, 8."""
    out = interval_demand([(0, 7200, 4), (3600, 10800, 8)])
    assert out.tolist() == pytest.approx([4.0, 12.0, 8.0])


def test_a_trace_marks_small_batch_gangs_spot_eligible_and_big_gangs_not(tmp_path):
    """Job a: 1 node (8 GPUs) of batch -> eligible; b: 16 nodes (128 GPUs) -> above the 7-node
    limit; c: 1 node serving inference -> never on spot. All run hour 0 only: 144 GPUs, 8 eligible."""
    jobs = [job("a").gpus(8).runs(3600).build(),
            job("b").gpus(8).gang(16).runs(3600).build(),
            job("c").gpus(8).runs(3600).kind(JobKind.INFERENCE).build()]
    p = tmp_path / "t.jsonl"
    write_jobs(p, jobs)
    d = read_trace(p, gpus_per_node=8, max_spot_nodes=7)
    assert d.gpus[0] == pytest.approx(8 + 128 + 8)
    assert d.eligible[0] == pytest.approx(8)


def test_a_simulation_directory_gives_the_gpus_its_jobs_really_ran(tmp_path):
    """The bundled deadlock scenario under gang-bestfit: two 8-node × 8-GPU jobs of 1 h run one
    after the other, so demand is 64 GPUs in hour 0 and 64 in hour 1; each is an 8-node gang,
    above a 7-node spot limit, so nothing is spot-eligible."""
    import json

    from gpufleet.econ.demand import read_simulation
    from gpufleet.policies.registry import profile
    from gpufleet.sim.runner import simulate
    from gpufleet.sim.scenario import bundled

    scn = bundled("deadlock")
    res = simulate(scn.fleet, scn.jobs(), profile("gang-bestfit"), horizon=scn.horizon)
    res.recorder.write_log(tmp_path / "events-gang-bestfit.jsonl")
    (tmp_path / "summary.json").write_text(json.dumps({"scenario": "deadlock",
                                                       "policies": {"gang-bestfit": {}}}))
    d = read_simulation(tmp_path / "summary.json", gpus_per_node=8, max_spot_nodes=7)
    assert d.gpus.tolist() == pytest.approx([64.0, 64.0])
    assert d.eligible.sum() == 0


ALIBABA = (__import__("pathlib").Path(__file__).resolve().parents[4]
           / "shared/data/alibaba-serving-2025/disaggregated_DLRM_trace.csv")


@pytest.mark.skipif(not ALIBABA.is_file(), reason="the Alibaba 2025 serving trace is not in ../shared")
def test_the_alibaba_serving_trace_is_read_as_live_gpu_instances_per_hour():
    """31 days = 744 hours; the live HN instances sampled on the hour range 3,076..3,367, so hourly
    means stay within about that band (instances shorter than an hour can only lower a mean)."""
    from gpufleet.econ.demand import load_demand

    d = load_demand(str(ALIBABA), 8, 7, 0.0)
    assert d.hours == 744
    assert d.gpus.min() >= 3000 and d.gpus.max() <= 3400
    assert d.eligible.sum() == 0
