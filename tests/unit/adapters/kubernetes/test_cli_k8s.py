import json

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app

from .conftest import DATA

runner = CliRunner()


def test_analyze_prints_the_chain_and_writes_the_report(tmp_path, cluster_dir):
    r = runner.invoke(app, ["k8s", "analyze", str(cluster_dir), "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "3 nodes: no GPUs; 1: too few free GPUs" in r.output
    assert "skipped kinds (not read): ReplicaSet (apps/v1) x1" in r.output
    html = (tmp_path / "report.html").read_text()
    assert "Nodes and the four GPU layers" in html and "default/gpu-pod-2" in html
    assert "&lt;table" not in html and "&lt;style" not in html
    data = json.loads((tmp_path / "analysis.json").read_text())
    assert data["pending"][0]["estimated_start"] == "2025-03-20T22:00:05+00:00"


def test_analyze_json_output_is_parseable_json(cluster_dir):
    r = runner.invoke(app, ["k8s", "analyze", str(cluster_dir), "--output", "json"])
    assert r.exit_code == 0
    assert json.loads(r.stdout)["gpus"]["allocated"] == 1


@pytest.mark.parametrize("content, args, expected", [
    (b"", [], "empty file"),
    (b"\x00\xff", [], "binary file"),
    (b'{"apiVersion": "v1", "kind": "List", "items": []}', [], "no Node objects"),
    (None, ["--assume-runtime-h", "nan"], "--assume-runtime-h"),
    (None, ["--assume-runtime-h", "1e12"], "--assume-runtime-h"),
], ids=["empty", "binary", "no nodes", "NaN hours", "huge hours"])
def test_bad_input_is_one_line_and_exit_2(tmp_path, content, args, expected):
    p = tmp_path / "s.json"
    if content is None:
        p = DATA / "nodes-aks.json"
    else:
        p.write_bytes(content)
    r = runner.invoke(app, ["k8s", "analyze", str(p), *args])
    assert r.exit_code == 2 and expected in r.output
    assert "Traceback" not in r.output


def test_help_reads(cluster_dir):
    r = runner.invoke(app, ["k8s", "analyze", "--help"])
    assert r.exit_code == 0 and "kubectl" in r.output


def test_export_claims_writes_templates_our_allocator_can_place(tmp_path):
    """A 2-GPU H100 pod set becomes a template of 2 gpu.nvidia.com devices whose selector and
    matchAttribute the allocator evaluates; the documented A100 device does not match it."""
    pytest.importorskip("celpy")
    from gpufleet.adapters.kubernetes.allocator import allocate
    from gpufleet.adapters.kubernetes.dra import read_claim, read_classes, read_slices

    from .conftest import real
    trace = tmp_path / "jobs.jsonl"
    trace.write_text(json.dumps({"id": "Train_1", "tenant": "t", "submit_time": 0, "run_time": 60,
                                 "pod_sets": [{"name": "w", "replicas": 2, "gpus": 2,
                                               "gpu_models": ["H100-80GB"]}]}) + "\n")
    out = tmp_path / "claims.json"
    r = runner.invoke(app, ["k8s", "export-claims", str(trace), "--out", str(out)])
    assert r.exit_code == 0, r.output
    (t,) = json.loads(out.read_text())["items"]
    assert t["metadata"]["name"] == "train-1-w"
    claim = read_claim(t)
    assert claim.requests[0].count == 2
    assert claim.match_attributes == ((("gpus",), "gpu.nvidia.com/productName"),)
    devices, counters, _ = read_slices(real("dra/resourceslice-nvidia.json")["items"])
    classes = read_classes(real("dra/deviceclasses.json")["items"])
    assert not allocate(claim, devices, classes, set(), counters).ok
    import copy
    sl = real("dra/resourceslice-nvidia.json")["items"][0]
    gpu = sl["spec"]["devices"][0]
    sl["spec"]["devices"] = []
    for i, product in enumerate(["NVIDIA A100-PCIE-40GB", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"]):
        d = copy.deepcopy(gpu)
        d["name"], d["attributes"]["productName"]["string"] = f"gpu-{i}", product
        sl["spec"]["devices"].append(d)
    devices, counters, _ = read_slices([sl])
    got = allocate(claim, devices, classes, set(), counters)
    assert got.ok and [d.name for d in got.devices["gpus"]] == ["gpu-1", "gpu-2"]


@pytest.mark.parametrize("args, expected", [
    (["--interval-s", "nan"], "--interval-s"), (["--assume-runtime-h", "0"], "--assume-runtime-h"),
    (["--metrics-port", "70000"], "--metrics-port"),
    (["--once", "--kubeconfig", "/nonexistent/kubeconfig"], "Kubernetes configuration"),
    (["--policy", "gang-bestfitt"], "--policy 'gang-bestfitt'"),
], ids=["NaN interval", "zero run time", "port out of range", "no cluster to reach", "unknown policy"])
def test_the_scheduler_refuses_bad_flags_and_a_missing_cluster_in_one_line(args, expected):
    r = runner.invoke(app, ["k8s", "scheduler", *args])
    assert r.exit_code == 2 and expected in r.output and "Traceback" not in r.output


def test_hybrid_compares_the_three_arms_as_json():
    r = runner.invoke(app, ["k8s", "hybrid", "--nodes", "4", "--days", "0.25", "-o", "json"])
    assert r.exit_code == 0, r.output
    arms = json.loads(r.stdout)["arms"]
    assert list(arms) == ["static", "dynamic", "all-k8s"]
    assert arms["static"]["node_moves"] == 0 and arms["all-k8s"]["node_moves"] == 0


@pytest.mark.parametrize("args", [["--nodes", "0"], ["--days", "nan"], ["--slurm-share", "1.5"],
                                  ["--drain-min", "-1"]], ids=lambda a: " ".join(a))
def test_hybrid_refuses_bad_flags_in_one_line(args):
    r = runner.invoke(app, ["k8s", "hybrid", *args])
    assert r.exit_code == 2 and args[0] in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("args", [
    ["--nodes", "4", "--days", "0.25", "-o", "json", "--seed", "3"],
    ["--nodes", "4", "--days", "0.25", "--output", "json", "--seed", "3"],
], ids=["options-after-hybrid", "simulate-own-output-and-seed"])
def test_simulate_hybrid_is_the_same_command_as_k8s_hybrid(args):
    """The issue names it `gpufleet simulate hybrid`; the numbers must equal `k8s hybrid`'s for
    the same flags, whether --output/--seed are parsed by simulate or passed on."""
    via_simulate = runner.invoke(app, ["simulate", "hybrid", *args])
    direct = runner.invoke(app, ["k8s", "hybrid", "--nodes", "4", "--days", "0.25", "-o", "json",
                                 "--seed", "3"])
    assert via_simulate.exit_code == 0 and direct.exit_code == 0, via_simulate.output
    assert json.loads(via_simulate.stdout) == json.loads(direct.stdout)
    assert json.loads(direct.stdout)["spec"]["seed"] == 3


@pytest.mark.parametrize("args, expected", [
    (["simulate", "hybrid", "--nodes", "0"], "--nodes"),
    (["simulate", "hybrid", "--bogus", "1"], "--bogus"),
    (["simulate", "hybrid", "--policy", "fifo"], "--policy"),
    (["simulate", "default", "--nodes", "4"], "--nodes"),
], ids=["bad-value", "unknown-option", "simulate-only-option", "hybrid-option-on-a-scenario"])
def test_simulate_hybrid_refuses_bad_flags_in_one_line(args, expected):
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and expected in r.output and "Traceback" not in r.output


def test_analyze_prints_the_defrag_plan_unless_told_not_to(tmp_path, nori):
    """Two 8-GPU copies of nori, a 4-GPU pod running on each, one waiting 8-GPU pod: moving one
    running pod onto the other node starts it, so the plan has one step; --no-defrag drops it."""
    items = []
    for name in ("a", "b"):
        n = json.loads(json.dumps(nori))
        n["metadata"]["name"] = name
        for k in ("capacity", "allocatable"):
            n["status"][k]["nvidia.com/gpu"] = "8"
        items.append(n)
    for name, node, gpus in (("r-a", "a", "4"), ("r-b", "b", "4"), ("w", None, "8")):
        res = {"nvidia.com/gpu": gpus}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "t"},
               "spec": {"containers": [{"name": "c", "resources": {"limits": res, "requests": res}}],
                        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]},
               "status": {"phase": "Pending"}}
        if node:
            pod["spec"]["nodeName"] = node
            pod["status"] = {"phase": "Running", "startTime": "2025-03-19T22:18:09Z"}
        items.append(pod)
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    with_plan = runner.invoke(app, ["k8s", "analyze", str(snap), "-o", "json"])
    without = runner.invoke(app, ["k8s", "analyze", str(snap), "-o", "json", "--no-defrag"])
    assert with_plan.exit_code == 0 and without.exit_code == 0, with_plan.output
    plan = json.loads(with_plan.stdout)["defrag_plan"]
    assert plan["started_gpus"] == 8 and len(plan["steps"]) == 1 and plan["steps"][0]["starts"] == "t/w"
    assert json.loads(without.stdout)["defrag_plan"] is None
    text = runner.invoke(app, ["k8s", "analyze", str(snap)])
    assert ("defrag plan (MILP, proven optimal: most GPUs started, then least GPU-h moved): 1 step(s) "
            "start 8 of 8 waiting GPU(s)") in text.stdout
    greedy = runner.invoke(app, ["k8s", "analyze", str(snap), "--defrag-method", "greedy"])
    assert "defrag plan (greedy): 1 step(s) start 8 of 8 waiting GPU(s)" in greedy.stdout
    bad = runner.invoke(app, ["k8s", "analyze", str(snap), "--defrag-method", "best"])
    assert bad.exit_code == 2


def test_a_clusterqueue_with_a_bad_quota_gets_one_line_and_exit_2(tmp_path):
    """The real node plus a ClusterQueue whose nominalQuota is not a quantity, or whose
    resourceGroups is a map: one line naming the object and field, exit 2, no traceback."""
    nodes = json.loads((DATA / "nodes-rke2-gpu.json").read_text())
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
          "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
              {"name": "f", "resources": [{"name": "cpu", "nominalQuota": "lots"}]}]}]}}
    bad_quantity = "ClusterQueue cq.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"
    for spec, where in ((cq["spec"], bad_quantity),
                        ({"resourceGroups": {"a": 1}}, "ClusterQueue cq.spec.resourceGroups: a list")):
        snap = tmp_path / "snap.json"
        snap.write_text(json.dumps({**nodes, "items": nodes["items"] + [{**cq, "spec": spec}]}))
        r = runner.invoke(app, ["k8s", "analyze", str(snap)])
        assert r.exit_code == 2 and where in r.output and "Traceback" not in r.output
        assert len(r.output.strip().splitlines()) == 1
