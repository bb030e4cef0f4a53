"""The live scheduler against ApiServerDouble (a test double built from the real recorded
objects in tests/data/k8s; see api_double.py for what it models)."""

import copy
import json
import re
from pathlib import Path

import pytest

from gpufleet.live.k8s_scheduler import KubeScheduler, SchedulerConfig

from .api_double import ApiServerDouble

DATA = Path(__file__).resolve().parents[2] / "data" / "k8s"
NOW = 1742426289.0   # 2025-03-19T23:18:09Z, the GPU node's last heartbeat


def real_nodes() -> list[dict]:
    return json.loads((DATA / "nodes-rke2-gpu.json").read_text())["items"]


def eight_gpu_node(name: str) -> dict:
    """The real node nori, renamed, with 8 GPUs in capacity and allocatable."""
    n = copy.deepcopy(real_nodes()[0])
    n["metadata"]["name"] = name
    for k in ("capacity", "allocatable"):
        n["status"][k]["nvidia.com/gpu"] = "8"
        n["status"][k]["cpu"] = "64"
    return n


def gpu_pod(name: str, gpus: int = 8, gang: str | None = None, scheduler: str = "gpufleet") -> dict:
    """The NVIDIA device-plugin README's gpu-pod, with our schedulerName and a JobSet label."""
    labels = {"jobset.sigs.k8s.io/jobset-name": gang} if gang else {}
    res = {"nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": labels,
                         "creationTimestamp": "2025-03-19T23:10:00Z"},
            "spec": {"schedulerName": scheduler, "restartPolicy": "Never",
                     "containers": [{"name": "cuda-container",
                                     "image": "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
                                     "resources": {"limits": res, "requests": res}}],
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                      "effect": "NoSchedule"}]},
            "status": {"phase": "Pending"}}


def scheduler(api, **cfg) -> KubeScheduler:
    return KubeScheduler(api, SchedulerConfig(**cfg), clock=lambda: NOW)


def test_a_gang_that_fits_is_bound_whole_and_confirmed_by_the_watch():
    api = ApiServerDouble([eight_gpu_node("a"), eight_gpu_node("b"),
                           gpu_pod("w0", gang="train"), gpu_pod("w1", gang="train")])
    s = scheduler(api)
    r = s.tick()
    assert sorted(r.bound) == sorted(api.binds)
    assert {n for _, n in api.binds} == {"a", "b"} and len(api.binds) == 2
    assert [e["reason"] for e in api.events] == ["Scheduled", "Scheduled"]
    assert set(s.cache.assumed) == {"default/w0", "default/w1"}     # assumed until the watch says so
    s.tick()
    assert s.cache.assumed == {} and len(api.binds) == 2                 # confirmed, not bound again


def test_a_gated_pod_is_neither_bound_nor_told_why_until_its_gate_is_removed():
    """A pod with Kueue's scheduling gate (kueue.x-k8s.io/admission) on a free node: no scheduler
    considers a gated pod, so no bind, no Event, no condition (the API server sets
    SchedulingGated); once the gate is gone (Kueue admitted it) it binds."""
    p = gpu_pod("gated", gpus=4)
    p["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    api = ApiServerDouble([eight_gpu_node("a"), p])
    s = scheduler(api)
    s.tick()
    assert api.binds == [] and api.events == [] and api.status_patches == []
    ungated = copy.deepcopy(api.objects["Pod"]["default/gated"])
    ungated["spec"].pop("schedulingGates")
    api.add(ungated)
    s.tick()
    assert api.binds == [("default/gated", "a")]


def test_pods_of_another_scheduler_are_left_alone():
    api = ApiServerDouble([eight_gpu_node("a"), gpu_pod("x", scheduler="default-scheduler")])
    r = scheduler(api).tick()
    assert r.bound == [] and r.waiting == {} and api.binds == []


def test_a_failed_bind_rolls_the_gang_back():
    """w1's bind fails with 500 after w0 was bound: w0 is deleted (its controller recreates it),
    nothing stays assumed, and every pod of the gang gets a Warning naming the failure."""
    api = ApiServerDouble([eight_gpu_node("a"), eight_gpu_node("b"),
                           gpu_pod("w0", gang="train"), gpu_pod("w1", gang="train")])
    api.fail_bind["default/w1"] = 500
    s = scheduler(api)
    r = s.tick()
    assert r.rolled_back == ["default/train"] and r.bound == []
    assert api.deleted == ["default/w0"] and s.cache.assumed == {}
    warnings = [e for e in api.events if e["type"] == "Warning"]
    assert len(warnings) == 2 and "HTTP 500" in warnings[0]["note"]
    assert s.metrics.values["gang_rollbacks"] == 1 and s.metrics.values["bind_failures"] == 1


def test_a_waiting_gang_gets_one_event_and_condition_per_pod_until_its_reason_changes():
    """One 8-GPU node, a 2 × 8-GPU gang: it can never fit; the reason is written once."""
    api = ApiServerDouble([eight_gpu_node("a"), gpu_pod("w0", gang="big"), gpu_pod("w1", gang="big")])
    s = scheduler(api)
    r = s.tick()
    assert set(r.waiting) == {"default/w0", "default/w1"}
    assert "UNRESOLVABLE" in r.waiting["default/w0"]
    assert len(api.status_patches) == 2
    cond = api.status_patches[0][1]["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("PodScheduled", "False", "Unschedulable")
    s.tick()
    assert len(api.status_patches) == 2 and len(api.events) == 2      # unchanged reason: not repeated


def test_an_expired_watch_relists_and_the_scheduler_carries_on():
    """After etcd compaction a watch from the old version is 410 Gone: the kind is listed again,
    and a pod added meanwhile is seen and bound."""
    api = ApiServerDouble([eight_gpu_node("a")])
    s = scheduler(api)
    s.tick()
    api.add(gpu_pod("late", gpus=4))
    api.compact()
    r = s.tick()
    assert r.bound == [("default/late", "a")]
    assert s.metrics.values["watch_restarts"] >= 1


def test_watch_bookmarks_let_every_watch_resume_after_compaction_without_a_relist():
    """With a BOOKMARK event (the documented shape: only a resourceVersion) seen on every
    watch, compaction up to that version expires nothing the scheduler still needs: no 410, no
    relist, and a pod added afterwards is still seen and bound. Without the bookmark, the kinds
    with no event since the first list are 410 Gone and listed again."""
    results = {}
    for with_bookmark in (True, False):
        api = ApiServerDouble([eight_gpu_node("a")])
        s = scheduler(api)
        s.tick()
        api.add(gpu_pod("early", gpus=4))
        s.tick()                      # binds early: the versions move on, the Node watch sees nothing
        if with_bookmark:
            api.bookmark()
        s.tick()
        api.compact()
        api.add(gpu_pod("late", gpus=4))
        r = s.tick()
        assert r.bound == [("default/late", "a")] and ("default/early", "a") in api.binds
        assert all(set(store) == set(api.objects[k]) for k, store in s.store.items())  # no bookmark stored
        results[with_bookmark] = s.metrics.values.get("watch_restarts", 0)
    assert results[True] == 0 and results[False] >= 1


def test_an_api_server_restart_loses_the_lease_and_the_watches_and_both_come_back():
    api = ApiServerDouble([eight_gpu_node("a"), gpu_pod("p", gpus=2)])
    s = scheduler(api)
    s.tick()
    api.restart()
    api.add(gpu_pod("q", gpus=2))
    r = s.tick()
    assert r.leader and r.bound == [("default/q", "a")]


def test_a_second_replica_does_nothing_while_the_first_holds_the_lease():
    api = ApiServerDouble([eight_gpu_node("a"), gpu_pod("p", gpus=2)])
    assert scheduler(api, identity="one").tick().leader
    other = scheduler(api, identity="two").tick()
    assert not other.leader and len(api.binds) == 1


def test_assumed_capacity_is_not_handed_out_twice_before_the_watch_confirms():
    """Two 8-GPU pods, one 8-GPU node: the first is bound and assumed; the double's watch is not
    read for pods in between (the bind's MODIFIED event is held back), yet the second waits."""
    api = ApiServerDouble([eight_gpu_node("a"), gpu_pod("p")])
    s = scheduler(api)
    assert s.tick().bound == [("default/p", "a")]
    api.log = [e for e in api.log if not (e[1] == "Pod" and e[2] == "MODIFIED")]   # confirmation lost
    api.add(gpu_pod("q"))
    r = s.tick()
    assert r.bound == [] and "default/q" in r.waiting


def test_metrics_are_exposed_in_the_prometheus_text_format():
    api = ApiServerDouble([eight_gpu_node("a"), gpu_pod("p", gpus=2)])
    s = scheduler(api)
    s.tick()
    text = s.metrics.exposition().decode()
    assert re.search(r"^gpufleet_bindings_total 1(\.0)?$", text, re.M) and "gpufleet_pending_pods" in text


def volcano_pod(name: str, gpus: int) -> dict:
    """gpu_pod, annotated as a member of the Volcano PodGroup ``test`` (Volcano's own annotation)."""
    pod = gpu_pod(name, gpus=gpus)
    pod["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "test"}
    return pod


def test_a_waiting_volcano_podgroup_gets_volcanos_unschedulable_condition_once():
    """Volcano's documented PodGroup ``test`` (minMember 1) and one pod asking 16 GPUs; the only
    node has 8, so the gang can never start. The PodGroup's old Unschedulable condition is
    replaced by ours (same type/status/reason as Volcano's), its Scheduled condition is kept,
    and an unchanged reason is not written again."""
    pg = json.loads((DATA / "volcano" / "podgroup-test.json").read_text())
    api = ApiServerDouble([eight_gpu_node("a"), volcano_pod("v0", 16), pg])
    s = scheduler(api)
    r = s.tick()
    assert "default/v0" in r.waiting
    assert [k for k, _ in api.podgroup_patches] == ["default/test"]
    stored = api.objects["VolcanoPodGroup"]["default/test"]["status"]
    conds = {c["type"]: c for c in stored["conditions"]}
    assert set(conds) == {"Unschedulable", "Scheduled"} and len(stored["conditions"]) == 2
    ours = conds["Unschedulable"]
    assert (ours["status"], ours["reason"]) == ("True", "NotEnoughResources")
    assert ours["message"] == r.waiting["default/v0"] and "UNRESOLVABLE" in ours["message"]
    assert ours["lastTransitionTime"] == "2025-03-19T23:18:09Z"
    assert conds["Scheduled"]["transitionID"] == "54514401-5c90-4b11-840d-90c1cda93096"
    assert stored["phase"] == "Running"                   # a merge patch leaves the rest alone
    s.tick()
    assert len(api.podgroup_patches) == 1


def test_a_volcano_podgroup_marked_unschedulable_is_marked_scheduled_once_its_gang_is_bound():
    """The gang of one 8-GPU pod waits on a full node (another 8-GPU pod runs there), gets the
    Unschedulable condition; when a second 8-GPU node joins it is bound, and the PodGroup then
    carries Volcano's Scheduled condition and no Unschedulable one."""
    pg = json.loads((DATA / "volcano" / "podgroup-test.json").read_text())
    busy = gpu_pod("busy", 8, scheduler="default-scheduler")
    busy["spec"]["nodeName"] = "a"
    busy["status"] = {"phase": "Running", "startTime": "2025-03-19T23:00:00Z"}
    api = ApiServerDouble([eight_gpu_node("a"), busy, volcano_pod("v0", 8), pg])
    s = scheduler(api)
    assert "default/v0" in s.tick().waiting
    api.add(eight_gpu_node("b"))
    r = s.tick()
    assert r.bound == [("default/v0", "b")]
    conds = {c["type"]: c for c in api.objects["VolcanoPodGroup"]["default/test"]["status"]["conditions"]}
    assert set(conds) == {"Scheduled"} and conds["Scheduled"]["status"] == "True"
    assert len(api.podgroup_patches) == 2


def test_a_waiting_scheduler_plugins_podgroup_gets_an_event_about_the_podgroup():
    """scheduler-plugins' CRD has no status.conditions (it would be pruned), so the reason goes
    into one FailedScheduling Event whose ``regarding`` is the PodGroup ``nginx`` (the
    coscheduling README's, minMember set to 2 here); its members are two 8-GPU pods and the only
    node has 8 GPUs, so 2 × 8 = 16 > 8 and the gang can never start."""
    pg = json.loads((DATA / "cluster" / "podgroups.json").read_text())["items"][0]
    pg["spec"]["minMember"] = 2
    pods = []
    for name in ("n0", "n1"):
        p = gpu_pod(name)
        p["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "nginx"}
        pods.append(p)
    api = ApiServerDouble([eight_gpu_node("a"), pg, *pods])
    s = scheduler(api)
    s.tick()
    about_pg = [e for e in api.events if e["regarding"]["kind"] == "PodGroup"]
    assert len(about_pg) == 1 and api.podgroup_patches == []
    ev = about_pg[0]
    assert (ev["reason"], ev["type"], ev["regarding"]["name"]) == ("FailedScheduling", "Warning", "nginx")
    assert ev["regarding"]["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert "UNRESOLVABLE" in ev["note"]
    s.tick()
    assert len([e for e in api.events if e["regarding"]["kind"] == "PodGroup"]) == 1


def test_an_upstream_podgroup_waits_with_its_condition_then_binds_whole():
    """The documentation's PodGroup training-worker-0 (scheduling.k8s.io/v1alpha2, gang minCount
    4) with four 8-GPU workers naming it in spec.schedulingGroup; the double serves it as its
    own kind. Two 8-GPU nodes: 2 × 8 < 4 × 8, nothing binds and the PodGroup's status gets
    PodGroupScheduled=False/Unschedulable once (not again while the reason holds); once two more
    nodes join, all four bind in one tick."""
    wl, pg, _ = json.loads((DATA / "upstream" / "podgroup-v1alpha2.json").read_text())["items"]
    for o in (wl, pg):
        o["metadata"]["namespace"] = "default"
    pods = []
    for i in range(4):
        p = gpu_pod(f"worker-{i}")
        p["spec"]["schedulingGroup"] = {"podGroupName": "training-worker-0"}
        pods.append(p)
    api = ApiServerDouble([eight_gpu_node("a"), eight_gpu_node("b"), wl, pg, *pods])
    assert set(api.objects["KubePodGroup"]) == {"default/training-worker-0"}
    s = scheduler(api)
    s.tick()
    assert api.binds == []
    [cond] = api.objects["KubePodGroup"]["default/training-worker-0"]["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("PodGroupScheduled", "False", "Unschedulable")
    s.tick()
    assert [k for k, _ in api.podgroup_patches] == ["default/training-worker-0"]
    api.add(eight_gpu_node("c"))
    api.add(eight_gpu_node("d"))
    s.tick()
    assert sorted(n for _, n in api.binds) == ["a", "b", "c", "d"]


class Unreachable:
    """The double behind a network that fails: the next ``failures`` calls of ``method`` raise
    ``error`` (as the official client's transport raises it), then calls go through."""

    def __init__(self, api, method: str, error: BaseException, failures: int) -> None:
        self._api, self._method, self._error, self.left = api, method, error, failures

    def __getattr__(self, name):
        real = getattr(self._api, name)
        if name != self._method:
            return real

        def call(*a, **kw):
            if self.left > 0:
                self.left -= 1
                raise self._error
            return real(*a, **kw)
        return call


def _transport_errors():
    import socket
    import ssl

    from urllib3.exceptions import MaxRetryError, ProtocolError

    return [
        pytest.param("acquire_lease", ConnectionRefusedError(111, "Connection refused"),
                     id="connection refused"),
        pytest.param("list", socket.gaierror(-2, "Name or service not known"), id="DNS failure"),
        pytest.param("watch", TimeoutError("timed out"), id="a timeout"),
        pytest.param("list", ssl.SSLError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"),
                     id="a TLS error"),
        pytest.param("list", MaxRetryError(None, "/api/v1/pods", "NewConnectionError"), id="urllib3 retries"),
        pytest.param("watch", ProtocolError("Connection aborted."), id="a connection cut mid-watch"),
    ]


@pytest.mark.parametrize(("method", "error"), _transport_errors())
def test_a_network_failure_is_retried_with_backoff_reported_and_survived(method, error):
    """A list or lease call failing three times: the cycles wait 1, 2, 4 × the 5 s interval
    (live/health.py's backoff), each is counted, and the health endpoint says unhealthy with the
    error. A watch that fails makes the next cycle list afresh, which works at once. Then the pod
    is bound and the scheduler is healthy again."""
    api = ApiServerDouble([eight_gpu_node("a"), gpu_pod("p", gpus=8)])
    if method == "watch":       # a watch needs a first list to resume from
        s = scheduler(api)
        for kind in s.rv:
            s.relist(kind)
        s.api = Unreachable(api, method, error, failures=3)
        expected = [5.0]
    else:
        s = scheduler(Unreachable(api, method, error, failures=3))
        expected = [5.0, 10.0, 20.0]
    waits = [s.step(5.0) for _ in expected]
    assert waits == expected
    assert s.metrics.values["api_errors"] == len(expected)
    health = s.health.as_dict()
    assert health["healthy"] is False and health["consecutive_failures"] == len(expected)
    assert type(error).__name__ in health["last_error"]
    assert s.step(5.0) <= 5.0
    assert api.binds == [("default/p", "a")]
    assert s.health.as_dict()["healthy"] is True


def test_the_backoff_is_capped_at_a_minute():
    from gpufleet.live.health import backoff_s

    assert [backoff_s(5.0, n) for n in (1, 4, 5, 10)] == [5.0, 40.0, 60.0, 60.0]


def test_the_health_endpoint_says_503_until_a_cycle_works_and_after_a_failed_one():
    import urllib.error
    import urllib.request

    from gpufleet.live.health import Health, serve_health

    health = Health()
    server = serve_health(health, 0, host="127.0.0.1")
    url = f"http://127.0.0.1:{server.server_address[1]}/healthz"
    try:
        with pytest.raises(urllib.error.HTTPError) as before:
            urllib.request.urlopen(url, timeout=5)
        assert before.value.code == 503
        health.ok(NOW)
        with urllib.request.urlopen(url, timeout=5) as r:
            assert r.status == 200 and json.loads(r.read())["healthy"] is True
        health.failed(ConnectionRefusedError(111, "Connection refused"))
        with pytest.raises(urllib.error.HTTPError) as after:
            urllib.request.urlopen(url, timeout=5)
        assert after.value.code == 503
        assert "ConnectionRefusedError" in json.loads(after.value.read())["last_error"]
    finally:
        server.shutdown()
        server.server_close()


def test_the_profile_the_user_names_decides_the_gangs():
    """One 8-GPU node, p0 bound to it; then ``late`` (8 GPUs) waits. Under the default
    (gang-conservative) every waiting gang gets a reservation: ``late`` is told it starts when p0
    ends (its start, 23:10, + the 24 h assumed run time = 2025-03-20 23:10). Named gang-bestfit
    (no reservations), the same cycle tells it no start at all: the named profile decided it,
    where before every Kubernetes cycle ran gang-conservative whatever the user asked for."""
    said = {}
    for prof in ("gang-conservative", "gang-bestfit"):
        api = ApiServerDouble([eight_gpu_node("a"), gpu_pod("p0")])
        s = scheduler(api, profile=prof)
        assert s.tick().bound == [("default/p0", "a")]
        api.add(gpu_pod("late"))
        said[prof] = s.tick().waiting["default/late"]
        assert s.last_analysis is not None and s.last_analysis.engine_input is not None
        assert s.last_analysis.engine_input.profile.name == prof
    assert "estimated start: 2025-03-20 23:10 UTC" in said["gang-conservative"]
    assert "estimated start: none" in said["gang-bestfit"]
