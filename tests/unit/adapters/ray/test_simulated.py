"""The simulated comparison: RayClusters over a small fleet, uncoordinated vs the coordination rules."""

from gpufleet.adapters.ray.simulated import raycluster_workload, simulate_pair, useful_gpu_s
from gpufleet.testing.builders import fleet


def test_the_workload_is_seeded():
    a = raycluster_workload(64, 0.5, 0.8, seed=3)
    assert a == raycluster_workload(64, 0.5, 0.8, seed=3)
    assert a != raycluster_workload(64, 0.5, 0.8, seed=4)


def test_useful_time_counts_bundle_gpus_within_the_window():
    """A group of 2 bundles × 4 GPUs, run 1 h, started at 0.5 h; window ends at 1 h: 8 × 0.5 h = 4 GPU-h."""
    arr = raycluster_workload(64, 0.5, 0.8, seed=3)[:1]
    a = arr[0]
    from dataclasses import replace

    from gpufleet.adapters.ray.mapping import Bundle, PlacementGroupSpec, Strategy
    a = replace(a, cluster=replace(a.cluster, pg=PlacementGroupSpec(a.cluster.name, (Bundle(4),) * 2,
                                                                     Strategy.PACK)), run_time=3600.0)
    assert useful_gpu_s([a], {a.cluster.name: 1800.0}, 3600.0) == 8 * 1800.0


def test_coordination_holds_no_gpu_idle_and_the_uncoordinated_pair_does():
    """Coordinated, workers are sized to bundles and released at the end: held = useful. The
    uncoordinated pair holds template-sized (8-GPU) workers for 1-4 GPU bundles and partial sets."""
    f = fleet().leaves(1, nodes=8, gpus=8).build()
    res = simulate_pair(f, raycluster_workload(f.total_gpus, 1.0, 0.7, seed=1), seed=1)
    assert res["coordinated"]["idle_held_pct"] < 0.5
    assert res["uncoordinated"]["idle_held_pct"] > 10.0
    for side in res.values():
        assert side["useful_pct"] <= side["held_pct"] + 1e-6
