"""Fragmentation measures, the fractional scenario format, and the defrag ledger in summary.json."""

import pytest

from gpufleet.engine.gpu_state import GpuSlot
from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.errors import InputError
from gpufleet.model.job import PodRequest
from gpufleet.policies.registry import profile
from gpufleet.sim.fragmentation import fragmentation_ratio, free_gpu_equivalents, schedulable_by_shape
from gpufleet.sim.metrics import summarize
from gpufleet.sim.runner import simulate
from gpufleet.sim.scenario import bundled, parse_scenario
from gpufleet.testing.builders import fleet, job


def two_nodes():
    return NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())


def test_scattered_free_gpus_are_fragments_for_an_8_gpu_pod_and_not_for_a_1_gpu_pod():
    t = two_nodes()
    t.take(0, PodRequest(4))
    t.take(1, PodRequest(4))
    assert fragmentation_ratio(t, [(PodRequest(8), 1.0)]) == 1.0
    assert fragmentation_ratio(t, [(PodRequest(1), 1.0)]) == 0.0
    assert fragmentation_ratio(t, [(PodRequest(8), 0.5), (PodRequest(1), 0.5)]) == 0.5
    assert schedulable_by_shape(t) == {1: 8, 2: 4, 4: 2, 8: 0}


def test_partly_shared_gpus_count_their_free_fraction():
    t = two_nodes()
    req = PodRequest(0, gpu_milli=250)
    t.take(0, req, slot=GpuSlot(0, tenant="x"))
    assert free_gpu_equivalents(t)[0] == pytest.approx(7.75)
    # A whole-GPU pod cannot use the 0.75 left on the shared GPU.
    assert fragmentation_ratio(t, [(PodRequest(1), 1.0)]) == pytest.approx(0.75 / 15.75)


@pytest.mark.parametrize("extra, expected", [
    ({"mig_profile": "5g.50gb"}, "unknown MIG profile"),
    ({"mig_profile": "3g.40gb", "gpus": 2}, "asks no whole GPUs"),
    ({"share": "mps"}, "need gpu_milli"),
    ({"gpu_milli": 1500}, "gpu_milli"),
], ids=["an unknown profile", "whole GPUs with a MIG profile", "a share mode without milli",
        "more than one GPU of milli"])
def test_bad_fractional_requests_get_one_line_naming_the_field(extra, expected):
    data = {"fleet": {"groups": [{"nodes": 1, "gpu": "H100"}]},
            "workload": {"jobs": [{"id": "a", "run_time": 60, **extra}]}}
    with pytest.raises(InputError, match=expected):
        parse_scenario(data, "x.yaml")


def test_fractional_requests_load_from_a_scenario():
    data = {"fleet": {"groups": [{"nodes": 1, "gpu": "H100"}]},
            "workload": {"jobs": [{"id": "m", "run_time": 60, "mig_profile": "nvidia.com/mig-1g.10gb"},
                                  {"id": "s", "run_time": 60, "gpu_milli": 500, "share": "mps",
                                   "gpu_memory_gb": 40}]}}
    m, s = parse_scenario(data, "x.yaml").jobs()
    assert m.pod_sets[0].request.mig_profile == "1g.10gb" and m.pod_sets[0].request.gpus == 0
    assert s.pod_sets[0].request.gpu_milli == 500 and s.pod_sets[0].request.share == "mps"


def test_a_defrag_run_reports_its_moves_recoveries_and_cost():
    """b and a filler share node 0, a sits on node 1; when the filler ends node 0 has 3 GPUs free
    and node 1 has 6: the 8-GPU gang fits only if a moves to node 0 (after 30 min of patience)."""
    f = fleet().leaves(1, nodes=2).build()
    jobs = [job("b").gpus(5).runs(20_000).build(),
            job("filler").gpus(3).at(1).runs(100).build(),
            job("a").gpus(2).at(2).runs(20_000).checkpoints(600, restart_s=60).build(),
            job("big").gpus(8).at(10).runs(3_600).build()]
    s = summarize(simulate(f, jobs, profile("gang-defrag"), cycle_interval_s=300.0))
    assert s["defrag_moves"] == 1 and s["defrag_gangs_unblocked"] == 1
    assert s["defrag_gpus_recovered"] == 8.0
    assert 0 < s["eviction_cost_gpu_hours"] < 1.0
    assert s["big_gang_wait_p50_s"] < 3_600
    none = summarize(simulate(f, jobs, profile("gang-fractional"), cycle_interval_s=300.0))
    assert none["defrag_moves"] == 0 and none["big_gang_wait_p50_s"] >= 20_000 - 10


def test_the_bundled_fractional_scenario_loads_with_all_three_kinds_of_request():
    scn = bundled("fractional")
    reqs = [ps.request for j in scn.jobs() for ps in j.pod_sets]
    assert any(r.mig_profile for r in reqs) and any(r.gpu_milli for r in reqs)
    assert any(r.gpus >= 8 for r in reqs)
    assert scn.spec.policies == ["gang-fractional", "gang-defrag-naive", "gang-defrag"]
