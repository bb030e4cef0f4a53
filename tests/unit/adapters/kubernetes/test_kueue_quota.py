"""Kueue quota arithmetic in ``k8s analyze``. The ClusterQueues are Kueue's own documentation
examples (tests/data/k8s/kueue/docs-*.json, single-clusterqueue-setup.json; PROVENANCE.md),
and the expected numbers are the ones that documentation states."""

import copy

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.adapters.kubernetes.analyze import analyze
from gpufleet.adapters.kubernetes.kueue_quota import MILLI, from_snapshot
from gpufleet.adapters.kubernetes.snapshot import Snapshot
from gpufleet.model.errors import InputError

from .conftest import DATA, real

GI = 2**30


def _snap(*objs):
    s = Snapshot()
    for o in objs:
        s.add(o, "test")
    return s


def _book(name, *extra):
    return from_snapshot(_snap(*real(f"kueue/{name}")["items"], *extra).objects)


def cpu(n):
    return {"cpu": round(n * MILLI)}


def test_borrowing_example_team_a_admits_up_to_both_queues_nominal():
    """cluster_queue.md "Borrowing example": with team-b-cq idle, team-a-cq can admit 12+9=21
    CPUs and 48+36=84Gi; 22 CPUs is 1 short."""
    book = _book("docs-borrowing.json")
    v = book.check("team-a-cq", {"cpu": 21 * MILLI, "memory": 84 * GI * MILLI})
    assert v.admits and v.borrows and v.flavors == {"cpu": "default-flavor", "memory": "default-flavor"}
    v = book.check("team-a-cq", cpu(22))
    assert not v.admits
    assert [(b.flavor, b.resource, b.short_by) for b in v.blocks] == [("default-flavor", "cpu", "1")]


def test_borrowing_limit_example_caps_team_a_at_nominal_plus_one():
    """"BorrowingLimit": team-a-cq (9, borrowingLimit 1) admits 9+1=10 CPUs; team-b-cq 12+9=21."""
    book = _book("docs-borrowinglimit.json")
    assert book.check("team-a-cq", cpu(10)).admits
    v = book.check("team-a-cq", cpu(11))
    assert not v.admits and v.blocks[0].short_by == "1" and "borrowing limit 1" in v.blocks[0].detail
    assert book.check("team-b-cq", cpu(21)).admits


def test_a_blocked_flavor_is_worded_with_its_usage_nominal_limit_and_what_the_cohort_leaves():
    """"BorrowingLimit": team-a-cq (9 CPUs, borrowingLimit 1) in cohort team-ab with team-b-cq
    (12, idle) asks 11 CPUs: the cohort leaves it 9 + min(1, 12) = 10, so it is 11 − 10 = 1
    short, and the line says each of those numbers."""
    v = _book("docs-borrowinglimit.json").check("team-a-cq", cpu(11))
    assert [(b.flavor, b.resource, b.needed, b.short_by) for b in v.blocks] == [
        ("default-flavor", "cpu", "11", "1")]
    assert v.blocks[0].detail == ("cpu in flavor default-flavor: needs 11, ClusterQueue team-a-cq uses 0 "
                                  "of nominal 9 (borrowing limit 1), cohort team-ab leaves 10 it may take: "
                                  "short by 1")


def test_lending_limit_example_lets_team_a_borrow_only_what_team_b_lends():
    """"LendingLimit": team-b-cq (12, lendingLimit 1) lends 1, so team-a-cq admits 9+1=10 CPUs;
    without lendingLimit (the borrowing example) it admits 21."""
    book = _book("docs-lendinglimit.json")
    assert book.check("team-a-cq", cpu(10)).admits
    assert not book.check("team-a-cq", cpu(10.5)).admits
    assert book.check("team-b-cq", cpu(21)).admits


def test_usage_of_the_other_queue_reduces_what_can_be_borrowed():
    """Borrowing example with a Workload admitted in team-b-cq using 10 CPUs (the documented
    admitted Workload of troubleshooting_jobs.md, its resourceUsage set to cpu 10): team-a-cq
    keeps its 9 and can borrow 12 − 10 = 2, so 11 fits and 12 is 1 short."""
    w = copy.deepcopy(real("kueue/workload-admitted.json")["items"][0])
    w["status"]["admission"]["clusterQueue"] = "team-b-cq"
    w["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] = {"cpu": "10"}
    book = _book("docs-borrowing.json", w)
    assert book.check("team-a-cq", cpu(11)).admits
    v = book.check("team-a-cq", cpu(12))
    assert v.blocks[0].short_by == "1" and "cohort team-ab leaves 11 it may take" in v.blocks[0].detail


def _admitted(i):
    w = copy.deepcopy(real("kueue/workload-admitted.json")["items"][0])
    w["metadata"]["name"] = f"job-other-{i}"
    return w


def test_a_suspended_job_workload_is_blocked_by_the_cpu_its_queue_has_used():
    """single-clusterqueue-setup (cluster-queue: cpu 9, memory 36Gi, no cohort); three admitted
    Workloads of the documented shape use 3 CPUs each = 9. The documented pending Workload
    job-my-job-19797 asks 3 CPUs (status.resourceRequests): 9 + 3 − 9 = 3 CPUs short in
    default-flavor — the arithmetic behind Kueue's own "insufficient quota for cpu" message.
    It has no pods (its Job is suspended), so it is reported as a queued Workload."""
    setup = real("kueue/single-clusterqueue-setup.json")["items"]
    for o in setup:
        if o["kind"] == "LocalQueue":
            o["metadata"]["namespace"] = "my-namespace"
    pending = real("kueue/workloads.json")["items"][0]
    a = analyze(_snap(*setup, pending, *[_admitted(i) for i in range(3)]))
    v = a.queued["my-namespace/job-my-job-19797"]
    assert v.cluster_queue == "cluster-queue" and not v.admits
    assert [(b.flavor, b.resource, b.needed, b.short_by) for b in v.blocks] == [
        ("default-flavor", "cpu", "3", "3")]
    assert "uses 9 of nominal 9, no cohort to borrow from: short by 3" in v.blocks[0].detail


def test_a_kueue_pod_group_over_the_gpu_quota_names_flavor_and_shortfall(nori):
    """Kueue's TAS sample queues (tests/data/kueue/v1beta2/tas-sample-gpu-queues.yaml):
    tas-cluster-queue holds 16 nvidia.com/gpu in tas-flavor. A plain pod group of 3 pods × 8
    GPUs in LocalQueue default/tas-user-queue asks 24: 24 − 16 = 8 GPUs short."""
    text = (DATA.parent / "kueue/v1beta2/tas-sample-gpu-queues.yaml").read_text()
    objs = [d for d in yaml.safe_load_all(text) if d]
    res = {"nvidia.com/gpu": "8"}
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"w{i}", "namespace": "default",
                          "labels": {"kueue.x-k8s.io/queue-name": "tas-user-queue",
                                     "kueue.x-k8s.io/pod-group-name": "train"}},
             "spec": {"containers": [{"name": "c", "resources": {"limits": res, "requests": res}}],
                      "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]},
             "status": {"phase": "Pending"}} for i in range(3)]
    a = analyze(_snap(nori, *objs, *pods))
    g = next(r for r in a.gangs if r.gang.key == "default/train")
    assert g.quota is not None and not g.quota.admits
    assert [(b.flavor, b.resource, b.short_by) for b in g.quota.blocks] == [
        ("tas-flavor", "nvidia.com/gpu", "8")]
    assert any("ClusterQueue tas-cluster-queue needs" in line and "short by 8" in line for line in g.chain)
    assert a.skipped["Topology (kueue.x-k8s.io/v1beta2)"] == 1
    assert g.code == "GATED" and g.assignments == [] and g.fixes == []   # Kueue's admission gate holds it


def test_try_next_flavor_prefers_a_later_flavor_that_fits_without_borrowing():
    """team-a-cq of the borrowing example, given a second flavor "spare" with 4 CPUs, has its 9
    default-flavor CPUs used by an admitted Workload. A 4-CPU Workload fits default-flavor only
    by borrowing (team-b-cq's idle 12) and spare within nominal (0 + 4 ≤ 4): with the default
    whenCanBorrow (Borrow) Kueue takes default-flavor, with TryNextFlavor it takes spare."""
    objs = copy.deepcopy(real("kueue/docs-borrowing.json")["items"])
    a = objs[0]
    a["spec"]["resourceGroups"][0]["flavors"].append(
        {"name": "spare", "resources": [{"name": "cpu", "nominalQuota": 4},
                                        {"name": "memory", "nominalQuota": 0}]})
    w = copy.deepcopy(real("kueue/workload-admitted.json")["items"][0])
    w["status"]["admission"]["clusterQueue"] = "team-a-cq"
    w["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] = {"cpu": "9"}
    book = from_snapshot(_snap(*objs, w).objects)
    v = book.check("team-a-cq", cpu(4))
    assert v.flavors == {"cpu": "default-flavor"} and v.borrows
    a["spec"]["flavorFungibility"] = {"whenCanBorrow": "TryNextFlavor"}
    book = from_snapshot(_snap(*objs, w).objects)
    v = book.check("team-a-cq", cpu(4))
    assert v.flavors == {"cpu": "spare"} and not v.borrows


def _with_usage(name, used_b_milli):
    w = copy.deepcopy(real("kueue/workload-admitted.json")["items"][0])
    w["status"]["admission"]["clusterQueue"] = "team-b-cq"
    w["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] = {"cpu": f"{used_b_milli}m"}
    return _book(name, w)


@settings(max_examples=60, deadline=None)
@given(used_b=st.integers(0, 12_000), d=st.integers(1, 25_000))
def test_team_a_admits_exactly_what_the_documented_borrowing_arithmetic_allows(used_b, d):
    """cluster_queue.md: team-a-cq (9 CPUs) borrows team-b-cq's unused nominal (12), so with
    team-b using u it admits d iff d ≤ 9 + 12 − u; with team-b's lendingLimit 1 it may borrow
    only what team-b lends, min(1, 12 − u): d ≤ 9 + min(1, 12 − u). (Milli-CPUs.)"""
    assert _with_usage("docs-borrowing.json", used_b).check("team-a-cq", {"cpu": d}).admits == (
        d <= 21_000 - used_b)
    assert _with_usage("docs-lendinglimit.json", used_b).check("team-a-cq", {"cpu": d}).admits == (
        d <= 9_000 + min(1_000, 12_000 - used_b))


def test_a_kueue_object_of_an_unknown_version_or_fungibility_is_named_not_guessed():
    """Versions and enums are adapters/kueue's (v1beta1, v1beta2; whenCanBorrow values)."""
    cq = copy.deepcopy(real("kueue/docs-borrowing.json")["items"][0])
    cq["apiVersion"] = "kueue.x-k8s.io/v1alpha9"
    with pytest.raises(InputError, match="v1beta1 or v1beta2"):
        from_snapshot(_snap(cq).objects)
    cq["apiVersion"] = "kueue.x-k8s.io/v1beta2"
    cq["spec"]["flavorFungibility"] = {"whenCanBorrow": "Maybe"}
    with pytest.raises(InputError, match="whenCanBorrow"):
        from_snapshot(_snap(cq).objects)
