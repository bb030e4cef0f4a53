"""Defrag plans with MIG (mixed strategy) requests: MIG instances are their own resources on a
node, and count as G/7 of a GPU in GPU-hours moved and GPUs started. Nodes are copies of the
real node nori given the mixed-strategy resources the NVIDIA device plugin advertises for an
A100-80GB split 4g.40gb + 3g.40gb (nvidia.com/mig-<profile> in capacity and allocatable)."""

import copy

import pytest

from gpufleet.adapters.kubernetes.analyze import analyze
from gpufleet.adapters.kubernetes.snapshot import Snapshot


def _snap(objs):
    s = Snapshot()
    for o in objs:
        s.add(o, "test")
    return s


def _mig_node(nori, name, pool):
    n = copy.deepcopy(nori)
    n["metadata"]["name"] = name
    n["metadata"]["labels"].update({"nvidia.com/mig.strategy": "mixed", "pool": pool})
    for k in ("capacity", "allocatable"):
        n["status"][k].pop("nvidia.com/gpu", None)
        n["status"][k]["nvidia.com/mig-3g.40gb"] = "1"
        n["status"][k]["nvidia.com/mig-4g.40gb"] = "1"
    return n


def _mig_pod(name, profile="3g.40gb", node=None, hours_ago=None, pool=None):
    res = {f"nvidia.com/mig-{profile}": "1"}
    spec = {"containers": [{"name": "c", "resources": {"limits": res, "requests": res}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    status = {"phase": "Pending"}
    if node:
        spec["nodeName"] = node
        status = {"phase": "Running", "startTime": f"2025-03-19T{23 - hours_ago:02d}:18:09Z"}
    if pool:
        spec["nodeSelector"] = {"pool": pool}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "t"},
            "spec": spec, "status": status}


@pytest.mark.parametrize("method", ["greedy", "milp"])
def test_a_mig_pod_gets_its_profile_freed_by_moving_a_mig_pod_elsewhere(nori, method):
    """a (pool x) and c (pool y), each 3g.40gb + 4g.40gb. r-a holds a's 3g.40gb (started 1 h
    ago); c's is free. w asks a 3g.40gb and selects pool x, so only a will do: move r-a to c
    (3/7 GPU × 1 h = 0.43 GPU-h) and w starts on a (3/7 = 0.4286 GPU-equivalents)."""
    nodes = [_mig_node(nori, "a", "x"), _mig_node(nori, "c", "y")]
    pods = [_mig_pod("r-a", node="a", hours_ago=1), _mig_pod("w", pool="x")]
    d = analyze(_snap(nodes + pods), defrag_method=method).defrag
    assert d is not None
    [step] = d.steps
    assert (step.gang, step.nodes, step.gpus) == ("t/w", ("a",), 0.4286)
    assert [(m.gang, m.from_nodes, m.to_nodes, m.gpu_h) for m in step.moves] == [
        ("t/r-a", ("a",), ("c",), 0.43)]


def test_a_mig_pod_of_another_profile_does_not_make_room(nori):
    """r-a holds a's 4g.40gb, and w asks 3g.40gb: a's 3g.40gb is free, so w needs no move."""
    nodes = [_mig_node(nori, "a", "x"), _mig_node(nori, "c", "y")]
    pods = [_mig_pod("r-a", profile="4g.40gb", node="a", hours_ago=1), _mig_pod("w", pool="x")]
    a = analyze(_snap(nodes + pods))
    assert a.defrag is None
    assert a.gangs[0].reasons == {"fits": 1, "node selector pool=x not matched": 1}
