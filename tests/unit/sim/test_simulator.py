import json

import numpy as np
import pytest

from gpufleet.engine.snapshot import NodeTable
from gpufleet.policies.registry import profile
from gpufleet.sim.metrics import summarize, time_weighted_mean
from gpufleet.sim.runner import simulate, stranded_gpus
from gpufleet.sim.workload import WorkloadSpec, generate, mean_gpu_seconds
from gpufleet.testing.builders import fleet, job


def test_time_weighted_mean_weights_each_value_by_how_long_it_held():
    # 10 GPUs for 1 s, then 0 for 3 s: mean 2.5 over [0, 4]
    assert time_weighted_mean([0.0, 1.0], [10, 0], 0.0, 4.0) == pytest.approx(2.5)


def test_a_job_waits_until_capacity_frees_and_metrics_see_it():
    f = fleet().leaves(1, nodes=1).build()
    jobs = [job("a").gpus(8).runs(100).build(), job("b").gpus(8).at(10).runs(100).build()]
    r = simulate(f, jobs, profile("gang-bestfit"), horizon=200)
    s = summarize(r)
    assert r.starts == {"a": 0.0, "b": 100.0}
    assert s["wait_p50_s"] == pytest.approx(45.0)  # waits 0 and 90
    assert s["gpu_allocation_pct"] == pytest.approx(100.0)
    assert s["makespan_s"] == 200.0


def test_free_gpus_on_a_node_without_cpu_left_are_stranded():
    f = fleet().leaves(1, nodes=2, gpus=8).build()
    t = NodeTable.from_fleet(f)
    t.take(0, job("x").gpus(2).cpus(224).build().pod_sets[0].request)
    pending = [job("p").gpus(1).cpus(8).build()]
    assert stranded_gpus(t, pending) == 6
    assert stranded_gpus(t, []) == 0


def test_the_generator_is_reproducible_and_hits_the_offered_load():
    spec = WorkloadSpec(days=14, offered_load=0.8, max_gpus=64)
    a = generate(spec, 512, seed=3)
    assert a == generate(spec, 512, seed=3)
    assert a != generate(spec, 512, seed=4)
    offered = [sum(j.total_gpus * j.run_time for j in generate(spec, 512, seed=s)) / (512 * 14 * 86400)
               for s in range(8)]
    assert float(np.mean(offered)) == pytest.approx(0.8, rel=0.1)


def test_most_jobs_are_small_but_most_gpu_time_is_in_gangs():
    spec = WorkloadSpec(days=14, max_gpus=512)
    jobs = generate(spec, 4096, seed=1)
    sizes = np.array([j.total_gpus for j in jobs])
    gpu_s = np.array([j.total_gpus * j.run_time for j in jobs])
    assert (sizes == 1).mean() > 0.6
    assert gpu_s[sizes >= 8].sum() / gpu_s.sum() > 0.7
    assert mean_gpu_seconds(spec, np.random.default_rng(0)) > 0


def test_the_event_log_is_written_as_json_lines(tmp_path):
    f = fleet().leaves(1, nodes=1).build()
    r = simulate(f, [job("a").gpus(8).runs(5).build()], profile("gang-bestfit"))
    r.recorder.write_log(tmp_path / "e.jsonl")
    rows = [json.loads(x) for x in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert [x["event"] for x in rows] == ["submit", "start", "finish"]
