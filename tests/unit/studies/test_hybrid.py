"""The hybrid driver: a Slurm partition and a Kubernetes pool on one fleet (studies/hybrid.py)."""

import pytest

from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, JobKind, PodRequest, PodSet
from gpufleet.studies.hybrid import ARMS, HybridSpec, run_arm, workload


def gang16() -> list[Job]:
    return [Job(JobId("t0"), TenantId("training"), (PodSet("worker", 2, PodRequest(8)),), 0.0, 3600.0,
                kind=JobKind.TRAINING)]


TINY = HybridSpec(nodes=2, gpus_per_node=8, slurm_share=0.5, drain_s=900.0, rebalance_s=600.0,
                  min_nodes=0, min_move=1)


def test_a_gang_larger_than_the_static_partition_never_starts():
    """Static split 1 + 1 nodes: a 16-GPU gang needs both nodes, the Slurm partition has one."""
    r = run_arm(TINY, gang16(), "static")
    assert r.never_started == 1 and r.moves == 0


def test_all_kubernetes_starts_it_at_once():
    r = run_arm(TINY, gang16(), "all-k8s")
    assert r.waits["training"] == [0.0] and r.moves == 0


def test_the_dynamic_split_lends_the_idle_node_and_pays_the_drain():
    """At the first rebalance (600 s) demand is 16 GPUs on Slurm, 0 on Kubernetes: the target is
    2 Slurm nodes, the idle Kubernetes node drains at once and is handed over 900 s later, so the
    gang starts at 600 + 900 = 1500 s; the move idles 8 GPUs × 900 s = 2.0 GPU-hours."""
    r = run_arm(TINY, gang16(), "dynamic")
    assert r.waits["training"] == [1500.0]
    assert r.moves == 1 and r.drain_gpu_h == pytest.approx(2.0)


def test_the_same_spec_gives_the_same_comparison():
    spec = HybridSpec(nodes=6, days=0.5, seed=3)
    jobs = workload(spec)
    first = [run_arm(spec, jobs, a).summary() for a in ARMS]
    assert first == [run_arm(spec, jobs, a).summary() for a in ARMS]


def test_every_job_runs_once_under_the_dynamic_split_and_all_kubernetes():
    """(The driver asserts no node is ever over-committed at every binding.)"""
    spec = HybridSpec(nodes=12, days=1.0, seed=1)
    jobs = workload(spec)
    for arm in ("dynamic", "all-k8s"):
        r = run_arm(spec, jobs, arm)
        assert r.never_started == 0
        assert len(r.waits["training"]) + len(r.waits["services"]) == len(jobs)
        assert r.busy_gpu_s == pytest.approx(sum(j.total_gpus * j.run_time for j in jobs))


def test_an_unknown_arm_is_refused():
    with pytest.raises(ValueError, match="arm"):
        run_arm(TINY, gang16(), "half")


def test_the_kubernetes_side_counts_its_peak_pods_per_cluster_and_per_node():
    """All-Kubernetes runs the 2 × 8-GPU gang: 2 pods at once, one on each node; under the static
    split the gang never reaches Kubernetes (it is training: the Slurm side), so 0 pods there."""
    r = run_arm(TINY, gang16(), "all-k8s")
    assert (r.k8s_peak_pods, r.k8s_peak_pods_per_node) == (2, 1)
    s = run_arm(TINY, gang16(), "static")
    assert (s.k8s_peak_pods, s.k8s_peak_pods_per_node) == (0, 0)


@pytest.mark.parametrize("nodes, pods, per_node, breached, clusters", [
    (16, 100, 8, [], 1),
    (5000, 150_000, 110, [], 1),                         # exactly at every documented limit
    (5001, 150_001, 111, ["nodes", "pods", "pods_per_node"], 2),
    (12_000, 96_000, 8, ["nodes"], 3),                   # 12,000 / 5,000 = 2.4 -> 3 clusters
], ids=["small", "at-the-limits", "one-past-each", "large-gpu-fleet"])
def test_one_kubernetes_cluster_is_checked_against_the_documented_limits(nodes, pods, per_node, breached,
                                                                         clusters):
    """kubernetes.io "Considerations for large clusters": ≤ 5,000 nodes, ≤ 150,000 pods,
    ≤ 110 pods per node."""
    from gpufleet.studies.hybrid import k8s_limits
    out = k8s_limits(nodes, pods, per_node)
    assert out["breached"] == breached and out["clusters_for_nodes"] == clusters
