"""Per-gang node filter: the set of nodes a gang may use, computed from the Kubernetes objects
(taints/tolerations, nodeSelector, required node affinity, GPU layers, DRA) and handed to the
engine on the job. Nodes are copies of the real GPU node ``nori`` changed as each test says."""

import copy

from gpufleet.adapters.kubernetes import engine_run
from gpufleet.adapters.kubernetes.affinity import Requirement, matches, read_terms
from gpufleet.adapters.kubernetes.analyze import analyze
from gpufleet.adapters.kubernetes.snapshot import Snapshot

ZONE = "topology.kubernetes.io/zone"


def _snap(objs):
    s = Snapshot()
    for o in objs:
        s.add(o, "test")
    return s


def _node(nori, name, *, zone="", taint=False, pool=""):
    n = copy.deepcopy(nori)
    n["metadata"]["name"] = name
    labels = n["metadata"]["labels"]
    labels["kubernetes.io/hostname"] = name
    if zone:
        labels[ZONE] = zone
    if pool:
        labels["pool"] = pool
    for k in ("capacity", "allocatable"):
        n["status"][k]["nvidia.com/gpu"] = "8"
    if taint:
        n["spec"]["taints"] = [{"key": "dedicated", "value": "training", "effect": "NoSchedule"}]
    return n


def _pod(name, *, gpus="8", tolerate=False, selector=None, affinity=None):
    res = {"nvidia.com/gpu": gpus}
    spec = {"containers": [{"name": "c", "resources": {"limits": res, "requests": res}}]}
    if tolerate:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "training",
                                "effect": "NoSchedule"}]
    if selector:
        spec["nodeSelector"] = selector
    if affinity:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": affinity}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "t"},
            "spec": spec, "status": {"phase": "Pending"}}


# The node-affinity example of https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/
# ("Node affinity example", pods/pod-with-node-affinity.yaml): zone In [antarctica-east1, antarctica-west1].
DOCS_TERMS = [{"matchExpressions": [{"key": ZONE, "operator": "In",
                                     "values": ["antarctica-east1", "antarctica-west1"]}]}]


def test_the_documented_zone_affinity_admits_only_nodes_in_those_zones():
    terms = read_terms({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": DOCS_TERMS}}}})
    assert matches(terms, {ZONE: "antarctica-west1"}, "a")
    assert not matches(terms, {ZONE: "europe-west4"}, "b")
    assert not matches(terms, {}, "c")


def test_terms_are_ored_expressions_anded_and_an_empty_term_selects_nothing():
    """Term 1: pool=x AND gpu count > 4; term 2: metadata.name = n9. The core/v1 NodeSelector rule."""
    t1 = (Requirement("pool", "In", ("x",)), Requirement("nvidia.com/gpu.count", "Gt", ("4",)))
    t2 = (Requirement("metadata.name", "In", ("n9",), field=True),)
    assert matches((t1, t2), {"pool": "x", "nvidia.com/gpu.count": "8"}, "n1")
    assert not matches((t1, t2), {"pool": "x", "nvidia.com/gpu.count": "4"}, "n1")
    assert matches((t1, t2), {}, "n9")
    assert not matches(((),), {"pool": "x"}, "n1")
    assert matches(((Requirement("pool", "NotIn", ("y",)),),), {}, "n1")      # absent label: NotIn holds
    assert not matches(((Requirement("pool", "DoesNotExist", ()),),), {"pool": "x"}, "n1")


def test_each_gang_gets_the_nodes_its_taints_selector_and_affinity_allow(nori):
    """Nodes: a (tainted dedicated=training, zone antarctica-east1), b (zone antarctica-west1,
    pool=big), c (zone europe-west4, pool=big), d (node not Ready).
    p tolerates the taint and takes the docs' zone affinity → {a, b};
    q has no toleration and selects pool=big → {b, c};
    r tolerates, selects pool=big and the zone affinity → {b}."""
    d = _node(nori, "d", zone="antarctica-east1")
    for c in d["status"]["conditions"]:
        if c["type"] == "Ready":
            c["status"] = "False"
    nodes = [_node(nori, "a", zone="antarctica-east1", taint=True), _node(nori, "b", zone="antarctica-west1",
             pool="big"), _node(nori, "c", zone="europe-west4", pool="big"), d]
    pods = [_pod("p", tolerate=True, affinity=DOCS_TERMS), _pod("q", selector={"pool": "big"}),
            _pod("r", tolerate=True, selector={"pool": "big"}, affinity=DOCS_TERMS)]
    a = analyze(_snap(nodes + pods))
    got = {g.gang.key: g.eligible for g in a.gangs}
    assert got == {"t/p": {"a", "b"}, "t/q": {"b", "c"}, "t/r": {"b"}}


def test_the_engine_job_carries_the_eligible_set(nori):
    """engine_run hands each gang's set to the engine as Job.eligible_nodes."""
    from gpufleet.adapters.kubernetes.jobs import group
    from gpufleet.adapters.kubernetes.nodes import TopologyLabels, read_node
    from gpufleet.adapters.kubernetes.pods import read_pod
    nodes = [read_node(_node(nori, "a", taint=True), TopologyLabels()),
             read_node(_node(nori, "b"), TopologyLabels())]
    gangs = group([read_pod(_pod("q"))], {})
    run = engine_run.run(nodes, [], gangs, 0.0, 3600.0, None, {})
    assert run.jobs["t/q"].eligible_nodes == frozenset({"b"})
    assert run.results["t/q"][3] == ["b"]


def test_one_engine_run_decides_gangs_with_different_node_filters(nori):
    """Two free 8-GPU nodes: a tainted dedicated=training, b untainted. p1 (8 GPUs, tolerates)
    may use a or b; p0 (8 GPUs, no toleration, tried first) only b. An engine blind to the
    filter puts p0 on a (the first node); one run_cycle honouring each job's eligible_nodes
    starts both (p0 on b, p1 on a)."""
    nodes = [_node(nori, "a", taint=True), _node(nori, "b")]
    a = analyze(_snap(nodes + [_pod("p1", tolerate=True), _pod("p0")]))
    by = {g.gang.key: g for g in a.gangs}
    assert by["t/p0"].assignments == [("t/p0", "b")]
    assert by["t/p1"].assignments == [("t/p1", "a")]
