"""The runtime model: a training job runs its trace time stretched by its placement's slowdown."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.fleet import NodeGroup, build_fleet
from gpufleet.model.parallelism import LLAMA_70B, Parallelism
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.sim.runtime import TopologyRuntime, runtime_model_for
from gpufleet.sim.workload import TrainingMix, WorkloadSpec, generate
from gpufleet.testing.builders import fleet, job


def tp8(pod_gpus: int = 4, pods: int = 2, **kw):
    base = job("a").gpus(pod_gpus).gang(pods).runs(3600).build()
    return replace(base, parallelism=Parallelism(8, **kw), training=LLAMA_70B)


@pytest.mark.parametrize(
    ("pod_nodes", "expected"),
    [
        pytest.param([0, 0], 1.0, id="both halves on one node run at trace speed"),
        pytest.param([0, 1], 2.34, id="halves on two nodes of one leaf run 2.34 times as long"),
    ],
)
def test_a_tp8_job_is_stretched_by_the_slowdown_of_its_placement(pod_nodes, expected):
    f = fleet().leaves(1, nodes=2).build()
    model = TopologyRuntime(f)
    assert model(tp8(), pod_nodes, NodeTable.from_fleet(f)) == pytest.approx(expected, abs=0.005)


def test_a_job_without_a_parallel_layout_runs_at_its_trace_time():
    f = fleet().leaves(1, nodes=2).build()
    plain = job("p").gpus(4).gang(2).build()
    assert TopologyRuntime(f)(plain, [0, 1], NodeTable.from_fleet(f)) == 1.0


def test_a_tp16_job_over_four_trays_of_one_nvl72_rack_runs_at_trace_time():
    f = fleet().nvl72(racks=2).build()
    j = replace(tp8(), pod_sets=(replace(tp8().pod_sets[0], replicas=4),), parallelism=Parallelism(16))
    model = TopologyRuntime(f)
    assert model(j, [0, 1, 2, 3], NodeTable.from_fleet(f)) == pytest.approx(1.0)
    assert model(j, [16, 17, 18, 19], NodeTable.from_fleet(f)) > 1.5  # trays of two racks


def test_an_nvl72_rack_never_straddles_two_leaves():
    f = build_fleet([NodeGroup(nodes=36, gpu="GB200", gpus_per_node=4, nvlink_domain_nodes=18, leaf_size=32)])
    leaves_of = {}
    for n in f.nodes:
        leaves_of.setdefault(n.nvlink_domain, set()).add(n.leaf)
    assert all(len(v) == 1 for v in leaves_of.values())


def test_the_simulator_finishes_a_split_job_late_by_its_slowdown_and_records_it():
    f = fleet().leaves(1, nodes=2).build()
    # One pod per node (memory), so each node keeps 4 free GPUs: the job can only run split.
    blocker = job("b0").gpus(4).gang(2).memory(1500).runs(100_000).build()
    j = replace(tp8(), submit_time=1.0)
    r = simulate(f, [blocker, j], profile("topology-blind"), runtime_model=TopologyRuntime(f))
    assert r.slowdowns is not None and r.slowdowns["a"] == pytest.approx(2.3355, abs=1e-3)
    assert r.finishes["a"] - r.starts["a"] == pytest.approx(3600 * r.slowdowns["a"])
    assert r.slowdowns["b0"] == 1.0


def test_a_scenario_without_a_runtime_model_gets_none():
    assert runtime_model_for("none", fleet().leaves(1, nodes=1).build()) is None


def test_the_training_mix_changes_layouts_but_not_arrivals_sizes_or_run_times():
    plain = generate(WorkloadSpec(days=1), 512, seed=4)
    mixed = generate(WorkloadSpec(days=1, training=TrainingMix()), 512, seed=4)
    assert [(j.submit_time, j.total_gpus, j.run_time) for j in plain] == \
           [(j.submit_time, j.total_gpus, j.run_time) for j in mixed]
    trained = [j for j in mixed if j.parallelism is not None]
    assert trained and all(j.parallelism.world_size == j.total_gpus for j in trained)
    assert all(j.parallelism is None for j in plain)
