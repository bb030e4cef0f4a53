import pytest

from gpufleet.adapters.kubernetes.jobs import group, to_job
from gpufleet.adapters.kubernetes.pods import Toleration, read_pod, read_podgroup

from .conftest import real


def pod(name="p", labels=None, annotations=None, containers=None, inits=None, **spec):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "labels": labels or {},
                         "annotations": annotations or {}},
            "spec": {"containers": containers
                     or [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                     "initContainers": inits or [], **spec},
            "status": {"phase": "Pending"}}


@pytest.mark.parametrize("tol, taint, ok", [
    (Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"), ("nvidia.com/gpu", "present", "NoSchedule"),
     True),
    (Toleration("nvidia.com/gpu", "Equal", "true", ""), ("nvidia.com/gpu", "present", "NoSchedule"), False),
    (Toleration("", "Exists", "", ""), ("anything", "x", "NoExecute"), True),
    (Toleration("k", "Exists", "", "NoExecute"), ("k", "", "NoSchedule"), False),
], ids=["Exists tolerates any value", "Equal needs the value", "empty key with Exists tolerates all",
        "effect must match"])
def test_tolerations_follow_the_core_v1_rule(tol, taint, ok):
    assert tol.tolerates(*taint) is ok


def test_a_pods_request_is_the_sum_of_containers_raised_to_its_largest_init_container():
    """containers 1 + 2 CPUs = 3; init container 4 CPUs > 3, so the pod asks 4."""
    p = read_pod(pod(containers=[{"name": "a", "resources": {"requests": {"cpu": "1"}}},
                                 {"name": "b", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}],
                     inits=[{"name": "i", "resources": {"requests": {"cpu": "4"}}}]))
    assert (p.cpus, p.memory_gb, p.gpus) == (4.0, 1.0, 0)


def test_gpu_limits_count_as_requests_and_a_product_selector_names_the_model():
    p = read_pod(pod(nodeSelector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}))
    assert p.gpus == 1 and p.gpu_models == ("H100-80GB",)


@pytest.mark.parametrize("labels, annotations, kind, key", [
    ({"scheduling.x-k8s.io/pod-group": "g"}, {}, "PodGroup", "ns/g"),
    ({}, {"scheduling.k8s.io/group-name": "vg"}, "Volcano PodGroup", "ns/vg"),
    ({"jobset.sigs.k8s.io/jobset-name": "js"}, {}, "JobSet", "ns/js"),
    ({"training.kubeflow.org/job-name": "pt"}, {}, "Kubeflow job", "ns/pt"),
    ({"leaderworkerset.sigs.k8s.io/name": "lws", "leaderworkerset.sigs.k8s.io/group-index": "2"}, {},
     "LeaderWorkerSet", "ns/lws/2"),
], ids=["scheduler-plugins", "volcano", "jobset", "pytorchjob", "leaderworkerset"])
def test_gang_membership_is_read_from_each_frameworks_label(labels, annotations, kind, key):
    assert read_pod(pod(labels=labels, annotations=annotations)).gang == (kind, key)


def test_pods_of_one_podgroup_form_one_gang_with_its_min_member_and_one_pod_set():
    items = real("cluster/pods.json")["items"]
    pg = read_podgroup(real("cluster/podgroups.json")["items"][0])
    gangs = group([read_pod(o) for o in items if o["metadata"]["name"].startswith("nginx")], {pg.key: pg})
    assert len(gangs) == 1 and gangs[0].min_member == 3 and len(gangs[0].pods) == 6
    job = to_job(gangs[0], 3600.0)
    assert job.total_pods == 6 and len(job.pod_sets) == 1 and job.pod_sets[0].request.cpus == 3.0


def test_a_bad_quantity_in_a_pod_is_one_line_naming_the_pod():
    from gpufleet.model.errors import InputError
    with pytest.raises(InputError, match="Pod ns/p"):
        read_pod(pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]))
