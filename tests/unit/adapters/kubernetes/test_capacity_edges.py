"""Issue 29 §3: free, stranded and overcommitted GPUs read right, estimates that say what they
assume, CPU-blocked gangs, deep nesting, and a 4,000-node snapshot in seconds.

Nodes are copies of the real node nori (tests/data/k8s/nodes-rke2-gpu.json) changed as each
test says; pods follow the device plugin's documented gpu-pod manifest; the DRA objects are the
driver's published ones (tests/data/k8s/PROVENANCE.md). The large snapshot is a test double
built from those real objects (gpufleet.testing.k8s_cluster)."""

import copy
import json
import time

import pytest
from typer.testing import CliRunner

from gpufleet.adapters.kubernetes.analyze import analyze
from gpufleet.adapters.kubernetes.snapshot import Snapshot, load
from gpufleet.cli.main import app
from gpufleet.report.kubernetes import text_lines
from gpufleet.testing.k8s_cluster import large_cluster

from .conftest import real

runner = CliRunner()


def _snap(objs):
    s = Snapshot()
    for o in objs:
        s.add(o, "test")
    return s


def _node(nori, name, gpus=8, cordoned=False):
    n = copy.deepcopy(nori)
    n["metadata"]["name"] = name
    for k in ("capacity", "allocatable"):
        n["status"][k]["nvidia.com/gpu"] = str(gpus)
        n["status"][k]["cpu"] = "64"
    if cordoned:
        n["spec"]["unschedulable"] = True
    return n


def _pod(name, gpus, node=None, start="2025-03-19T22:18:09Z", phase=None):
    res = {"nvidia.com/gpu": str(gpus)}
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "t"},
         "spec": {"containers": [{"name": "c", "resources": {"limits": res, "requests": res}}],
                  "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
         "status": {"phase": "Pending"}}
    if node:
        p["spec"]["nodeName"] = node
        p["status"] = {"phase": phase or "Running", "startTime": start}
    return p


def test_a_node_whose_bound_pods_ask_more_gpus_than_it_has_is_reported_overcommitted(nori):
    """nori allocates 1 GPU; two Running pods bound to it ask 1 each: 2 requested, 1 allocatable.
    The kubelet would have refused the second, so the snapshot contradicts itself: reported with
    both pods, 1 GPU over, and nothing free there (not a silent max(0, 1 - 2))."""
    a = analyze(_snap([nori, _pod("a", 1, "nori"), _pod("b", 1, "nori")]))
    [o] = a.overcommitted
    assert (o.node, o.allocatable, o.requested, o.pods) == ("nori", 1, 2, ["t/a", "t/b"])
    assert (a.totals["overcommitted_nodes"], a.totals["overcommitted_gpus"]) == (1, 1)
    assert a.totals["free_on_schedulable_nodes"] == 0 and a.totals["allocated"] == 2
    line = next(x for x in text_lines(a) if x.startswith("overcommitted"))
    assert "bound pods request 2 GPU(s), it allocates 1 (t/a, t/b)" in line


def test_a_finished_pod_does_not_count_toward_overcommit(nori):
    a = analyze(_snap([nori, _pod("a", 1, "nori"), _pod("done", 1, "nori", phase="Succeeded")]))
    assert a.overcommitted == [] and a.totals["overcommitted_nodes"] == 0


def test_free_gpus_on_a_cordoned_node_are_stranded_and_counted_under_their_own_name(nori):
    """a: 8 GPUs, a 4-GPU pod running, 4 free. b: cordoned (spec.unschedulable), 8 free. The
    only pending pod asks 8: a's 4 are the wrong shape, b's 8 are behind the cordon. All 12 free
    GPUs are stranded; free on schedulable nodes is 4, counting the cordoned node 12."""
    a = analyze(_snap([_node(nori, "a"), _node(nori, "b", cordoned=True), _pod("r", 4, "a"), _pod("w", 8)]))
    got = {s.node: (s.gpus, s.reason) for s in a.stranded}
    assert got["a"] == (4, "wrong shape (fewer free GPUs than any pending pod asks)")
    assert got["b"][0] == 8 and got["b"][1].startswith("node unschedulable (") and "cordon" in got["b"][1]
    t = a.totals
    assert (t["free_on_schedulable_nodes"], t["free_incl_unschedulable_nodes"], t["stranded"]) == (4, 12, 12)
    assert ("4 free on schedulable nodes (12 counting cordoned and not-Ready nodes), 12 stranded"
            in text_lines(a)[0])


def test_a_cordoned_nodes_gpus_are_idle_not_stranded_when_nothing_waits(nori):
    a = analyze(_snap([_node(nori, "b", cordoned=True)]))
    assert a.stranded == [] and a.totals["free_incl_unschedulable_nodes"] == 8


def _dra(nori, template):
    """The DRA snapshot of test_analyze (nori as ipp1-0033, the driver's published A100-40GB
    device, classes and templates, the driver's gpu-pod), the pod asking ``template``."""
    n = copy.deepcopy(nori)
    n["metadata"]["name"] = "ipp1-0033"
    del n["status"]["capacity"]["nvidia.com/gpu"], n["status"]["allocatable"]["nvidia.com/gpu"]
    pods = real("dra/pods.json")["items"]
    pods[0]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = template
    return _snap([n, *real("dra/deviceclasses.json")["items"],
                  *real("dra/resourceslice-nvidia.json")["items"], *real("dra/claimtemplates.json")["items"],
                  *pods])


def test_a_free_gpu_a_pending_dra_pods_claim_rejects_is_stranded(nori):
    """The published device is an A100 with 40Gi; template gpu-over-40gi selects memory > 40Gi.
    The DRA pod is the only pending pod: before, pods with claims were left out of the shapes,
    so nothing pending 'asked for a GPU' and the free A100 read as idle. It is stranded by the
    DRA constraint."""
    pytest.importorskip("celpy")
    a = analyze(_dra(nori, "gpu-over-40gi"))
    [s] = a.stranded
    assert (s.node, s.gpus) == ("ipp1-0033", 1) and "DRA" in s.reason


def test_a_free_gpu_a_pending_dra_pod_can_use_is_not_stranded(nori):
    pytest.importorskip("celpy")
    assert analyze(_dra(nori, "single-gpu")).stranded == []


def test_a_finished_pod_created_later_does_not_move_now_or_the_estimates(cluster_dir):
    """gpu-pod-2's estimate and fix come from 'now' (the snapshot's latest timestamp, nori's
    heartbeat at 23:18:09). A Succeeded pod created two days later bears on nothing here; before,
    it moved 'now' by two days and the fix's GPU-hours with it (1.3 → 49.3)."""
    base = analyze(load(cluster_dir))
    snap = load(cluster_dir)
    late = _pod("finished", 1, "nori", start="2025-03-21T23:00:00Z", phase="Succeeded")
    late["metadata"]["creationTimestamp"] = "2025-03-21T22:59:00Z"
    snap.add(late, "test")
    after = analyze(snap)
    key = "default/gpu-pod-2"
    g0, g1 = (next(g for g in a.gangs if g.gang.key == key) for a in (base, after))
    assert after.now == base.now and g1.chain == g0.chain and g1.fixes == g0.fixes


def test_the_report_says_which_now_and_which_run_time_the_estimates_assume(cluster_dir):
    """Printed once, above the estimates: the time taken as now with where it was read, and the
    assumed run time of running pods. --now overrides the snapshot's time (and says so); the
    estimate 2025-03-20 22:00 is gpu-pod's start 22:00:05 + 24 h, +22.7 h from 23:18:09."""
    r = runner.invoke(app, ["k8s", "analyze", str(cluster_dir)])
    assert r.exit_code == 0, r.output
    assert ("estimates assume: now = 2025-03-19 23:18:09 UTC (latest timestamp in the snapshot: Node nori "
            "heartbeat; --now sets it); every running pod runs 24 h from its start") in r.output
    assert "estimated start: 2025-03-20 22:00 UTC (+22.7 h from now)" in r.output
    assert "t=17425" not in r.output   # the engine's raw simulated seconds are read as a clock time
    r = runner.invoke(app, ["k8s", "analyze", str(cluster_dir), "--now", "2025-03-20T21:00:05Z",
                            "--assume-runtime-h", "24"])
    assert "now = 2025-03-20 21:00:05 UTC (--now" in r.output and "(+1.0 h from now)" in r.output


@pytest.mark.parametrize("value", ["yesterday", "2025-03-20T21:00:05", "nan"])
def test_a_bad_now_is_one_line_and_exit_2(cluster_dir, value):
    r = runner.invoke(app, ["k8s", "analyze", str(cluster_dir), "--now", value])
    assert r.exit_code == 2 and "--now" in r.output and "Traceback" not in r.output


def test_a_gang_blocked_by_cpu_is_explained_as_cpu_blocked(cluster_dir):
    """The nginx PodGroup's pods ask 3 CPUs and no GPU; the nodes allocate 1900m or 2 CPUs. The
    chain says CPU (not "needs 3 pods of 0 GPU(s)", which read as a GPU shortage)."""
    g = next(g for g in analyze(load(cluster_dir)).gangs if g.gang.key == "default/nginx")
    text = "\n".join(g.chain)
    assert "0 GPU(s)" not in text
    assert "no GPU (CPU-only: 3 CPU(s)" in g.chain[0]
    assert "no node could ever hold one pod (4 nodes: too little CPU)" in text
    assert "blocked by CPU or memory, not GPUs: by GPUs alone all 3 would fit" in g.engine


@pytest.mark.parametrize("doc", [
    "[" * 200_000,
    '{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "a"}, "spec": '
    + '{"a": ' * 50_000 + "1" + "}" * 50_000 + "}]}",
], ids=["deep array", "deep field in a pod"])
def test_deep_nesting_is_one_line_not_a_recursion_error(tmp_path, doc):
    p = tmp_path / "deep.json"
    p.write_text(doc)
    r = runner.invoke(app, ["k8s", "analyze", str(p)])
    assert r.exit_code == 2 and "nested too deeply" in r.output
    assert "Traceback" not in r.output and "RecursionError" not in r.output


def test_a_4000_node_12000_pod_snapshot_is_analysed_in_seconds(nori):
    """4,000 copies of nori with 8 GPUs, 9,000 running 1-4-GPU pods and 3,000 pending pods
    (single 8-GPU pods, JobSets of two, small pods): the defrag plan has 64 steps to find among
    4,000 nodes. Before the greedy's journal and bounds (bench/README.md, "k8s analyze at 4,000
    nodes") this took about 300 s of CPU; now about 3 s. The bound, 60 s of CPU, leaves room for
    a loaded 2-core machine and still fails the old code by 5×."""
    snap = _snap(large_cluster(nori, 4000, 12000))
    t0 = time.process_time()
    a = analyze(snap)
    took = time.process_time() - t0
    assert len(a.nodes) == 4000 and len(a.pods) == 12000
    assert a.defrag is not None and a.defrag.steps
    assert took < 60, f"{took:.1f} s of CPU"
    assert json.dumps(a.totals)
