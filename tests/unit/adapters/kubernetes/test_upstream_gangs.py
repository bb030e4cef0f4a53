"""Gangs from the upstream gang-scheduling API (``scheduling.k8s.io``, alpha in 1.35/1.36): the
Kubernetes documentation's own Workload, PodGroup and Pod manifests (tests/data/k8s/upstream,
PROVENANCE.md), copied into as many pods as each test says, on copies of the real node nori."""

import copy

from gpufleet.adapters.kubernetes.analyze import analyze
from gpufleet.adapters.kubernetes.snapshot import Snapshot

from .conftest import real


def _snap(objs):
    s = Snapshot()
    for o in objs:
        s.add(o, "test")
    return s


def _node(nori, name):
    n = copy.deepcopy(nori)
    n["metadata"]["name"] = name
    for k in ("capacity", "allocatable"):
        n["status"][k]["nvidia.com/gpu"] = "8"
    return n


def _workers(template: dict, n: int, gpus: str = "8", replica_keys=None) -> list[dict]:
    """n copies of the documented worker-0 pod (worker-0 … worker-n-1), each asking ``gpus``."""
    out = []
    for i in range(n):
        p = copy.deepcopy(template)
        p["metadata"]["name"] = f"worker-{i}"
        c = p["spec"].setdefault("containers", [{"name": "ml-worker", "image": "training:v1"}])[0]
        c["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
        p["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        if replica_keys:
            p["spec"]["workloadRef"]["podGroupReplicaKey"] = replica_keys[i]
        p["status"] = {"phase": "Pending"}
        out.append(p)
    return out


def _v1alpha2():
    wl, pg, pod = real("upstream/podgroup-v1alpha2.json")["items"]
    return wl, pg, pod


def test_a_v1alpha2_podgroup_gang_of_four_binds_whole_on_four_free_nodes(nori):
    """PodGroup training-worker-0 (gang minCount 4) and 4 workers × 8 GPUs on four 8-GPU nodes:
    one gang of 4, every pod on its own node."""
    wl, pg, pod = _v1alpha2()
    a = analyze(_snap([_node(nori, f"n{i}") for i in range(4)] + [wl, pg, *_workers(pod, 4)]))
    [g] = a.gangs
    assert (g.gang.kind, g.gang.key, g.gang.min_member) == (
        "Kubernetes PodGroup", "default/training-worker-0", 4)
    assert g.code == "SCHEDULED" and sorted(n for _, n in g.assignments) == ["n0", "n1", "n2", "n3"]


def test_a_v1alpha2_gang_that_does_not_fit_whole_binds_nothing(nori):
    """The same gang with three nodes: 3 × 8 < 4 × 8 GPUs, so no worker binds (all or nothing)."""
    wl, pg, pod = _v1alpha2()
    a = analyze(_snap([_node(nori, f"n{i}") for i in range(3)] + [wl, pg, *_workers(pod, 4)]))
    [g] = a.gangs
    assert g.assignments == [] and g.code != "SCHEDULED" and g.gang.min_member == 4


def test_a_pod_naming_a_missing_podgroup_waits_for_it_even_with_room(nori):
    """Documented: a pod whose PodGroup does not exist stays pending until it is created."""
    _, _, pod = _v1alpha2()
    a = analyze(_snap([_node(nori, "n0"), *_workers(pod, 1)]))
    [g] = a.gangs
    assert g.code == "WAITING_FOR_POD_GROUP" and g.assignments == []
    assert g.fixes == [] and a.defrag is None     # nothing to move for: the group is missing
    assert any("default/training-worker-0, which is not in the snapshot" in line for line in g.chain)


def test_a_basic_policy_schedules_each_pod_on_its_own(nori):
    """The PodGroup's policy changed to ``basic: {}``: two workers on one 8-GPU node asking 8
    each are two gangs of one; one binds, the other waits."""
    wl, pg, pod = _v1alpha2()
    pg["spec"]["schedulingPolicy"] = {"basic": {}}
    a = analyze(_snap([_node(nori, "n0"), wl, pg, *_workers(pod, 2)]))
    assert [(g.gang.kind, g.gang.key) for g in a.gangs] == [
        ("Pod", "default/worker-0"), ("Pod", "default/worker-1")]
    assert sum(1 for g in a.gangs if g.assignments) == 1


def test_a_v1alpha1_workload_pod_group_is_a_gang_with_its_min_count(nori):
    """Workload training-job-workload (podGroups: workers, gang minCount 4) and 4 pods with the
    documented workloadRef: one gang some-ns/training-job-workload/workers of minMember 4."""
    wl, pod = real("upstream/workload-v1alpha1.json")["items"]
    a = analyze(_snap([_node(nori, f"n{i}") for i in range(4)] + [wl, *_workers(pod, 4)]))
    [g] = a.gangs
    assert (g.gang.kind, g.gang.key, g.gang.min_member) == (
        "Kubernetes Workload", "some-ns/training-job-workload/workers", 4)
    assert g.code == "SCHEDULED"
    assert a.skipped == {}     # the upstream Workload is read, not skipped


def test_replica_keys_split_one_pod_group_into_independent_gangs(nori):
    """workload-reference.md: minCount 2 and four pods, two with podGroupReplicaKey "0" and two
    with "1", are two independent gangs of two."""
    wl, pod = real("upstream/workload-v1alpha1.json")["items"]
    wl["spec"]["podGroups"][0]["policy"]["gang"]["minCount"] = 2
    a = analyze(_snap([_node(nori, "n0"), wl, *_workers(pod, 4, gpus="4", replica_keys="0011")]))
    assert [(g.gang.key, len(g.gang.pods), g.gang.min_member) for g in a.gangs] == [
        ("some-ns/training-job-workload/workers/0", 2, 2), ("some-ns/training-job-workload/workers/1", 2, 2)]
    assert sum(1 for g in a.gangs if g.assignments) == 1      # 8 GPUs hold one gang of 2 × 4
