"""Jobs that can never run are found at load time, with a reason a user can act on."""

from gpufleet.model.fleet import NodeGroup, build_fleet
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.sim.feasibility import unschedulable_jobs, why_never

# 2 nodes × 8 H100 = 16 GPUs, 224 CPUs and 2048 GB per node (NodeGroup defaults).
FLEET = build_fleet([NodeGroup(nodes=2, gpu="H100-80GB", gpus_per_node=8)])


def job(jid: str, replicas: int = 1, gpus: int = 1, cpus: float = 0.0, mem: float = 0.0,
        models: tuple[str, ...] = (), milli: int = 0, mig: str | None = None) -> Job:
    req = PodRequest(gpus, cpus, mem, models, milli, None, 0.0, mig)
    return Job(JobId(jid), TenantId("t"), (PodSet("w", replicas, req),), 0.0, 60.0)


def test_a_gang_larger_than_the_fleet_is_unschedulable_with_the_arithmetic():
    """4 pods × 8 GPUs = 32 GPUs > 16 in the fleet."""
    reason = why_never(job("a", replicas=4, gpus=8), FLEET)
    assert reason is not None and "32 GPUs" in reason and "16 allowed GPUs" in reason


def test_a_gang_exactly_the_fleet_size_may_run():
    """2 pods × 8 GPUs = 16 GPUs = the fleet."""
    assert why_never(job("a", replicas=2, gpus=8), FLEET) is None


def test_a_gpu_model_the_fleet_lacks_is_named():
    reason = why_never(job("b", models=("A100-80GB",)), FLEET)
    assert reason is not None and "A100-80GB" in reason and "H100-80GB" in reason


def test_more_cpu_than_any_node_is_unschedulable():
    reason = why_never(job("c", cpus=1000), FLEET)
    assert reason is not None and "1000 CPUs" in reason and "224 CPUs" in reason


def test_cpu_limits_how_many_pods_fit_on_a_node():
    """150 CPUs per pod: one pod per 224-CPU node, so 2 pods fit but 3 cannot, although 3 GPUs would."""
    assert why_never(job("d", replicas=2, gpus=1, cpus=150), FLEET) is None
    assert why_never(job("d", replicas=3, gpus=1, cpus=150), FLEET) is not None


def test_a_pod_wider_than_any_node_is_unschedulable():
    assert why_never(job("e", gpus=9), FLEET) is not None


def test_fractional_pods_pack_several_per_gpu_so_many_replicas_may_run():
    """40 pods of 100 milli need 4 GPUs' worth; the fleet has 16 GPUs."""
    assert why_never(job("f", replicas=40, gpus=0, milli=100), FLEET) is None


def test_a_mig_slice_needs_a_mig_capable_model():
    l40s = build_fleet([NodeGroup(nodes=1, gpu="L40S", gpus_per_node=4)])
    assert why_never(job("g", gpus=0, mig="1g.10gb"), l40s) is not None
    assert why_never(job("g", gpus=0, mig="1g.10gb"), FLEET) is None


def test_unschedulable_jobs_lists_each_job_with_its_reason_in_order():
    jobs = [job("ok"), job("big", replicas=4, gpus=8), job("ok2"), job("big2", replicas=4, gpus=8)]
    assert [u.job for u in unschedulable_jobs(jobs, FLEET)] == ["big", "big2"]


def test_more_mig_slices_than_the_empty_fleet_holds_is_unschedulable():
    """An H100 holds 7 instances of 1g.10gb; 2 nodes × 8 GPUs × 7 = 112. 112 pods may run, 113
    never can (the engine's own count, ``NodeTable.slots``; before, a fractional pod was counted
    as unbounded per node and 113 passed)."""
    assert why_never(job("m", replicas=112, gpus=0, mig="1g.10gb"), FLEET) is None
    reason = why_never(job("m", replicas=113, gpus=0, mig="1g.10gb"), FLEET)
    assert reason is not None and "112 such pods" in reason
