"""The analysis of a snapshot: the assembled cluster in tests/data/k8s/cluster (real nodes,
published manifests), and copies of the real GPU node changed as each test says."""

import copy
from datetime import UTC, datetime

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpufleet.adapters.kubernetes.analyze import analyze
from gpufleet.adapters.kubernetes.snapshot import Snapshot, load

from .conftest import real


def epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).timestamp()


def gang(a, key):
    return next(g for g in a.gangs if g.gang.key == key)


def test_a_gpu_pod_behind_a_running_one_waits_for_it_to_end(cluster_dir):
    """gpu-pod holds nori's only GPU since 2025-03-19T22:00:05Z; with a 24 h run-time assumption
    it ends at 2025-03-20T22:00:05Z, the engine's estimated start for gpu-pod-2."""
    a = analyze(load(cluster_dir), assume_runtime_s=24 * 3600)
    g = gang(a, "default/gpu-pod-2")
    assert g.code == "UNSCHEDULABLE"
    assert g.estimated_start == epoch("2025-03-20T22:00:05Z")
    assert g.blockers == ["default/gpu-pod on nori"]
    assert g.reasons == {"no GPUs": 3, "too few free GPUs": 1}
    assert "3 nodes: no GPUs; 1: too few free GPUs" in " ".join(g.chain)


def test_the_cheapest_fix_for_a_blocked_gpu_pod_names_the_work_it_would_move(cluster_dir):
    """gpu-pod has run from 22:00:05 to the snapshot's 23:18:09 (4,684 s = 1.30 h) on 1 GPU:
    evicting it displaces 1 × 1.30 = 1.3 GPU-hours."""
    g = gang(analyze(load(cluster_dir)), "default/gpu-pod-2")
    assert [(f.what, f.displaced_gpu_h) for f in g.fixes] == [("evict default/gpu-pod to place on nori", 1.3)]


def test_a_podgroup_no_node_can_hold_is_unresolvable_with_the_cpu_named(cluster_dir):
    """nginx pods ask 3 CPUs; the AKS nodes allocate 1900m and nori 2 CPUs: none fits, ever."""
    a = analyze(load(cluster_dir))
    g = gang(a, "default/nginx")
    assert g.code == "UNRESOLVABLE" and not g.fits_empty
    assert g.reasons == {"too little free CPU": 4}
    assert g.gang.min_member == 3


def test_totals_count_allocated_against_usable(cluster_dir):
    t = analyze(load(cluster_dir)).totals
    assert (t["physical"], t["allocatable"], t["usable"], t["allocated"]) == (1, 1, 1, 1)
    assert (t["free_on_schedulable_nodes"], t["free_incl_unschedulable_nodes"]) == (0, 0)
    assert (t["pending_pods"], t["pending_gpus"]) == (7, 1)


def _snap(nodes, pods):
    s = Snapshot()
    for o in nodes + pods:
        s.add(o, "test")
    return s


def _gpu_pod(name, gpus="1", cpu=None, tolerate=True):
    res = {"nvidia.com/gpu": gpus, **({"cpu": cpu} if cpu else {})}
    spec = {"containers": [{"name": "c", "resources": {"limits": res, "requests": res}}]}
    if tolerate:
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "t"}, "spec": spec,
            "status": {"phase": "Pending"}}


def _eight_gpu(nori, name):
    """nori with 8 allocatable GPUs (as an 8-GPU node would show), renamed."""
    n = copy.deepcopy(nori)
    n["metadata"]["name"] = name
    for k in ("capacity", "allocatable"):
        n["status"][k]["nvidia.com/gpu"] = "8"
    return n


def test_free_gpus_no_pending_pod_can_use_are_stranded_with_the_reason(nori):
    """Node a: 8 free GPUs, 2 CPUs. The only pending pod asks 1 GPU + 3 CPUs: CPU is exhausted
    on a, so its 8 GPUs are stranded."""
    a = analyze(_snap([_eight_gpu(nori, "a")], [_gpu_pod("p", cpu="3")]))
    assert [(s.node, s.gpus, s.reason) for s in a.stranded] == [("a", 8, "CPU exhausted on the node")]
    assert a.totals["stranded"] == 8


def test_a_taint_the_pod_does_not_tolerate_is_counted_per_node(nori):
    """Both nodes carry nvidia.com/gpu:NoSchedule; a pod without the toleration fits neither."""
    nodes = [_eight_gpu(nori, "a"), _eight_gpu(nori, "b")]
    for n in nodes:
        n["spec"]["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    a = analyze(_snap(nodes, [_gpu_pod("p", tolerate=False), _gpu_pod("q")]))
    assert gang(a, "t/p").reasons == {"untolerated taint nvidia.com/gpu": 2}
    assert gang(a, "t/p").fixes[0].what == "tolerate taint nvidia.com/gpu (opens 2 node(s))"
    assert gang(a, "t/p").fixes[0].displaced_gpu_h == 0
    assert gang(a, "t/q").code == "SCHEDULED"


def test_a_gang_too_big_for_free_gpus_but_not_the_cluster_waits_and_names_the_gpu_layer_down(nori):
    """Two 8-GPU nodes, one with its device plugin paused for a MIG change: a 2 × 8-GPU gang
    fits an empty cluster of two healthy nodes only, so it waits and the chain names the layer."""
    a_node, b_node = _eight_gpu(nori, "a"), _eight_gpu(nori, "b")
    b_node["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] = "paused-for-mig-change"
    pods = [dict(_gpu_pod(f"w{i}", gpus="8"), metadata={"name": f"w{i}", "namespace": "t",
                 "labels": {"jobset.sigs.k8s.io/jobset-name": "train"}}) for i in range(2)]
    a = analyze(_snap([a_node, b_node], pods))
    g = gang(a, "t/train")
    assert g.gang.kind == "JobSet" and len(g.gang.pods) == 2
    assert g.code != "SCHEDULED"
    assert g.reasons == {"GPU layer down: device-plugin": 1, "fits": 1}
    assert any("device-plugin: nvidia.com/gpu.deploy.device-plugin=paused-for-mig-change" in line
               for line in g.chain)


def test_the_real_nodes_alone_give_an_empty_pending_list_and_no_stranded_gpu():
    a = analyze(load_real_gpu_nodes())
    assert a.gangs == [] and a.stranded == [] and a.totals["gpu_nodes"] == 1


def load_real_gpu_nodes():
    return _snap(real("nodes-rke2-gpu.json")["items"], [])


def _dra_snapshot(nori, allocated: bool = False):
    """nori renamed to ipp1-0033 (the node of the published ResourceSlice) with nvidia.com/gpu
    removed from capacity and allocatable: on a DRA node the driver, not the device plugin,
    publishes the GPUs. With ``allocated``, a ResourceClaim holding gpu-0 is added."""
    n = copy.deepcopy(nori)
    n["metadata"]["name"] = "ipp1-0033"
    del n["status"]["capacity"]["nvidia.com/gpu"], n["status"]["allocatable"]["nvidia.com/gpu"]
    objs = [n, *real("dra/deviceclasses.json")["items"], *real("dra/resourceslice-nvidia.json")["items"],
            *real("dra/claimtemplates.json")["items"], *real("dra/pods.json")["items"]]
    if allocated:
        objs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                     "metadata": {"name": "other", "namespace": "gpu-example"},
                     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                         "deviceClassName": "gpu.nvidia.com"}}]}},
                     "status": {"allocation": {"devices": {"results": [{
                         "request": "gpu", "driver": "gpu.nvidia.com", "pool": "ipp1-0033",
                         "device": "gpu-0"}]}}}})
    return _snap(objs, [])


def test_a_dra_pod_fits_the_gpu_its_claim_template_selects(nori):
    a = analyze(_dra_snapshot(nori))
    g = gang(a, "gpu-example/gpu-pod")
    assert g.code == "SCHEDULED" and g.gang.gpus == 1
    node = next(n for n in a.nodes if n.name == "ipp1-0033")
    assert node.node.gpus == 1 and "published in ResourceSlices" in node.layers[3].detail


def test_a_dra_pod_whose_only_gpu_is_allocated_waits_with_the_claim_named(nori):
    a = analyze(_dra_snapshot(nori, allocated=True))
    g = gang(a, "gpu-example/gpu-pod")
    assert g.code != "SCHEDULED"
    assert g.reasons == {"DRA claim single-gpu: request gpu: 0 free matching device(s), needs 1": 1}


def _paths(obj, prefix=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:2]):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i))


def test_a_field_of_the_wrong_type_anywhere_is_an_input_error_not_a_crash(cluster_dir):
    """Every field of the real GPU node and of a pending pod, in turn, replaced by a value of
    another JSON type: the analysis either copes or raises one InputError."""
    from gpufleet.model.errors import InputError
    base = load(cluster_dir)
    node = base.of("Node")[0]
    pod = next(p for p in base.of("Pod") if p["metadata"]["name"] == "gpu-pod-2")
    checked = 0
    for target in (node, pod):
        for path in [p for p in _paths(target) if p[0] in ("metadata", "spec", "status")][:120]:
            for bad in ([1, 2], "x", 7, None, {"a": 1}):
                obj = copy.deepcopy(target)
                parent = obj
                for k in path[:-1]:
                    parent = parent[k]
                parent[path[-1]] = bad
                try:
                    s = Snapshot()
                    for o in base.of("Node") + base.of("Pod"):
                        s.add(obj if o is target else o, "t")
                    analyze(s)
                except InputError as e:
                    assert "\n" not in str(e)
                checked += 1
    assert checked > 400


def test_a_pod_of_a_job_kueue_has_not_admitted_shows_kueues_reason_as_the_quota_step(aks_nodes):
    """The Kueue docs' pending Workload for Job my-job: its pods' chain starts with Kueue's
    QuotaReserved=False reason instead of "not checked"."""
    wl = real("kueue/workloads.json")["items"]
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"my-job-{i}", "namespace": "my-namespace",
                          "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "my-job"}]},
             "spec": {"containers": [{"name": "container", "resources": {"requests": {"cpu": "1"}}}]},
             "status": {"phase": "Pending"}} for i in range(1)]
    a = analyze(_snap(aks_nodes + wl, pods))
    line = gang(a, "my-namespace/my-job-0").chain[1]
    assert line.startswith("quota: Kueue Workload my-namespace/job-my-job-19797 (LocalQueue user-queue) "
                           "has no quota: Pending: couldn't assign flavors")


def test_a_node_whose_gpu_layer_is_down_still_runs_cpu_pods_but_offers_no_gpu(nori):
    """nori with its device plugin paused for a MIG change: a 1-CPU pod binds there, a 1-GPU pod
    is told the device-plugin layer is down."""
    nori["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] = "paused-for-mig-change"
    cpu = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cpu", "namespace": "t"},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
           "status": {"phase": "Pending"}}
    a = analyze(_snap([nori], [cpu, _gpu_pod("g")]))
    assert gang(a, "t/cpu").code == "SCHEDULED"
    assert gang(a, "t/g").reasons == {"GPU layer down: device-plugin": 1}
    assert a.totals["usable"] == 0


def test_an_eviction_whose_pods_fit_elsewhere_is_offered_as_a_defrag_move(nori):
    """Nodes a and b have 8 GPUs. A running 4-GPU pod on each leaves 4 + 4 free: an 8-GPU pod
    fits nowhere, though 8 GPUs are free. Evicting a's pod (4 GPUs, 1 h = 4 GPU-h) frees a, and
    that pod fits in b's 4 free GPUs: a defrag move."""
    a_node, b_node = _eight_gpu(nori, "a"), _eight_gpu(nori, "b")
    run = []
    for node, start in (("a", "2025-03-19T22:18:09Z"), ("b", "2025-03-19T21:18:09Z")):
        p = _gpu_pod(f"r-{node}", gpus="4")
        p["spec"]["nodeName"] = node
        p["status"] = {"phase": "Running", "startTime": start}
        run.append(p)
    an = analyze(_snap([a_node, b_node], [*run, _gpu_pod("big", gpus="8")]))
    fix = gang(an, "t/big").fixes[0]
    assert fix.what == "evict t/r-a to place on a (a defrag move: they fit in free GPUs elsewhere now)"
    assert fix.displaced_gpu_h == 4.0
    assert an.fragmentation[8] == 1.0 and an.fragmentation[4] == 0.0


def _four_nodes_half_full(nori):
    nodes = [_eight_gpu(nori, n) for n in "abcd"]
    run = []
    for node, start in zip("abcd", ("22", "21", "20", "19"), strict=True):
        p = _gpu_pod(f"r-{node}", gpus="4")
        p["spec"]["nodeName"] = node
        p["status"] = {"phase": "Running", "startTime": f"2025-03-19T{start}:18:09Z"}
        run.append(p)
    return nodes, run


def test_the_greedy_defrag_plan_takes_the_cheapest_gang_per_gpu_step_by_step(nori):
    """Four 8-GPU nodes a-d, each running one 4-GPU pod started 1, 2, 3 and 4 h before the
    snapshot (costs 4, 8, 12, 16 GPU-h if moved). 16 GPUs are free, 4 per node, so neither
    waiting 8-GPU pod (w1, w2) fits. The greedy plan:
    1) move r-a (4 GPU-h) into b's free 4 GPUs; w1 starts on a (0.5 GPU-h per GPU started);
    2) b is full and r-a moved once already, so for w2 the cheapest is moving r-c (12 GPU-h)
       into d's free 4 GPUs (moving r-d would cost 16); w2 starts on c.
    All 16 waiting GPUs start for 4 + 12 = 16 GPU-h moved. The single-gang fix list cannot say
    this: it offers each waiting pod the same cheapest eviction (r-a)."""
    nodes, run = _four_nodes_half_full(nori)
    an = analyze(_snap(nodes, [*run, _gpu_pod("w1", gpus="8"), _gpu_pod("w2", gpus="8")]),
                 defrag_method="greedy")
    d = an.defrag
    assert d is not None and (d.waiting_gpus, d.started_gpus, d.displaced_gpu_h) == (16, 16, 16.0)
    first, second = d.steps
    assert (first.gang, first.nodes, first.displaced_gpu_h) == ("t/w1", ("a",), 4.0)
    assert [(m.gang, m.from_nodes, m.to_nodes) for m in first.moves] == [("t/r-a", ("a",), ("b",))]
    assert (second.gang, second.nodes, second.displaced_gpu_h) == ("t/w2", ("c",), 12.0)
    assert [(m.gang, m.from_nodes, m.to_nodes) for m in second.moves] == [("t/r-c", ("c",), ("d",))]
    assert {gang(an, k).fixes[0].what.split(" to ")[0] for k in ("t/w1", "t/w2")} == {"evict t/r-a"}


def test_the_milp_defrag_plan_finds_the_cheaper_set_of_moves_the_greedy_misses(nori):
    """The same cluster. Emptying two nodes for w1 and w2 costs least by moving the two
    youngest pods r-a (4 GPU-h) and r-b (8 GPU-h) into c's and d's free 4 GPUs: 16 GPUs start
    for 4 + 8 = 12 GPU-h (0.75 per GPU), where the greedy moved 16 (1.0 per GPU); the solver
    proves it optimal."""
    nodes, run = _four_nodes_half_full(nori)
    an = analyze(_snap(nodes, [*run, _gpu_pod("w1", gpus="8"), _gpu_pod("w2", gpus="8")]))
    d = an.defrag
    assert d is not None and d.method == "milp" and d.optimal
    assert (d.started_gpus, d.displaced_gpu_h, d.gpu_h_per_gpu) == (16, 12.0, 0.75)
    moves = {m.gang: m for s in d.steps for m in s.moves}
    assert set(moves) == {"t/r-a", "t/r-b"}
    assert {moves["t/r-a"].to_nodes, moves["t/r-b"].to_nodes} == {("c",), ("d",)}
    assert sorted(n for s in d.steps for n in s.nodes) == ["a", "b"]


def test_the_milp_starts_a_bigger_gang_the_greedy_blocks(nori):
    """Same four half-full nodes; waiting: w1 (one 8-GPU pod) and g (a JobSet of two 8-GPU
    pods). Free 16 GPUs can hold w1 + g = 24 never, so the best is g (16 GPUs). The greedy first
    takes w1 (move r-a, 4 GPU-h: 0.5 per GPU, cheaper than g's 12/16 = 0.75) and then g no
    longer fits: 8 GPUs started. The MILP starts g: 16 GPUs for 12 GPU-h (r-a and r-b moved)."""
    nodes, run = _four_nodes_half_full(nori)
    g = [dict(_gpu_pod(f"g{i}", gpus="8"), metadata={"name": f"g{i}", "namespace": "t",
              "labels": {"jobset.sigs.k8s.io/jobset-name": "g"}}) for i in range(2)]
    pods = [*run, _gpu_pod("w1", gpus="8"), *g]
    greedy = analyze(_snap(nodes, pods), defrag_method="greedy").defrag
    best = analyze(_snap(nodes, pods)).defrag
    assert (greedy.started_gpus, greedy.displaced_gpu_h, [s.gang for s in greedy.steps]) == (8, 4.0, ["t/w1"])
    assert (best.started_gpus, best.displaced_gpu_h, [s.gang for s in best.steps]) == (16, 12.0, ["t/g"])


def test_no_defrag_plan_when_no_move_helps(nori):
    """One 8-GPU node running a 4-GPU pod and a waiting 8-GPU pod: the running pod has nowhere
    else to go, so no move exists and the plan is None (the report says so)."""
    p = _gpu_pod("r", gpus="4")
    p["spec"]["nodeName"] = "a"
    p["status"] = {"phase": "Running", "startTime": "2025-03-19T22:18:09Z"}
    an = analyze(_snap([_eight_gpu(nori, "a")], [p, _gpu_pod("w", gpus="8")]))
    assert an.defrag is None


def test_gangs_a_reservation_holds_back_keep_no_room_in_either_defrag_plan(nori):
    """Four 8-GPU nodes: n0 runs r0 (1 GPU) + r1 (4), n1 and n2 one 4-GPU pod each, n3 full.
    Free: 3 + 4 + 4 + 0 = 11. Waiting: w0, w1 (4 GPUs each: they fit on n1 and n2 now) and w2,
    w3 (8 each: fit nowhere). The engine reserves for an 8-GPU gang and holds w0 and w1 back
    (starting them would delay it), so they are not what fragmentation blocks: neither plan
    starts them or keeps their room. Moving r0 (1 GPU × 1 h) and r1 (4 × 1 h) to n1/n2 empties
    n0 for one 8-GPU gang: 8 GPUs for 5 GPU-h, in the greedy and the MILP alike. (The MILP once
    counted w0 + w1 as 8 GPUs started for free and returned no plan.)"""
    nodes = [_eight_gpu(nori, f"n{i}") for i in range(4)]
    pods, running = [], [(0, 1, 1), (0, 4, 1), (1, 4, 2), (2, 4, 2), (3, 4, 1), (3, 4, 1)]
    for k, (node, gpus, hours) in enumerate(running):
        p = _gpu_pod(f"r{k}", gpus=str(gpus))
        p["spec"]["nodeName"] = f"n{node}"
        p["status"] = {"phase": "Running", "startTime": f"2025-03-19T{23 - hours:02d}:18:09Z"}
        pods.append(p)
    pods += [_gpu_pod(f"w{k}", gpus=str(g)) for k, g in enumerate([4, 4, 8, 8])]
    an = analyze(_snap(nodes, pods), defrag_method="greedy")
    assert {g.gang.key: g.code for g in an.gangs}["t/w0"] == "WAIT"
    for method in ("greedy", "milp"):
        d = analyze(_snap(nodes, pods), defrag_method=method).defrag
        assert d is not None, method
        assert (d.started_gpus, d.displaced_gpu_h) == (8, 5.0), method
        assert {m.gang for s in d.steps for m in s.moves} == {"t/r0", "t/r1"}, method
        assert all(s.gang in ("t/w2", "t/w3") for s in d.steps), method


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(running=[(0, 1, 1), (0, 4, 1), (1, 4, 2), (2, 4, 2), (3, 4, 1), (3, 4, 1)], waiting=[4, 4, 8, 8])
@given(running=st.lists(st.tuples(st.integers(0, 3), st.sampled_from([1, 2, 4]), st.integers(1, 12)),
                        max_size=8),
       waiting=st.lists(st.sampled_from([2, 4, 8]), min_size=1, max_size=4))
def test_a_defrag_plan_never_starts_more_gpus_than_are_free_and_moves_a_gang_once(nori, running, waiting):
    """Moves only shift work between nodes, so whatever the cluster, the GPUs a plan starts are
    at most the free GPUs (4 nodes × 8 − running); each step's cost is the sum of its moves,
    each running gang moves at most once, and only waiting gangs are started. The MILP, an
    optimum, never starts fewer GPUs than the greedy, and for as many never moves more."""
    nodes = [_eight_gpu(nori, f"n{i}") for i in range(4)]
    used, pods = [0] * 4, []
    for k, (node, gpus, hours) in enumerate(running):
        if used[node] + gpus > 8:
            continue
        used[node] += gpus
        p = _gpu_pod(f"r{k}", gpus=str(gpus))
        p["spec"]["nodeName"] = f"n{node}"
        p["status"] = {"phase": "Running", "startTime": f"2025-03-19T{23 - hours:02d}:18:09Z"}
        pods.append(p)
    pods += [_gpu_pod(f"w{k}", gpus=str(g)) for k, g in enumerate(waiting)]
    plans = {m: analyze(_snap(nodes, pods), defrag_method=m).defrag for m in ("greedy", "milp")}
    for method, d in plans.items():
        if d is None:
            continue
        assert d.started_gpus <= 32 - sum(used)
        moved = [m.gang for s in d.steps for m in s.moves]
        assert len(moved) == len(set(moved)) and all(g.startswith("t/r") for g in moved)
        assert all(s.gang.startswith("t/w") for s in d.steps) and moved
        assert all(s.moves for s in d.steps) or method == "milp"
        assert all(abs(s.displaced_gpu_h - sum(m.gpu_h for m in s.moves)) < 0.01 for s in d.steps)
    g, m = plans["greedy"], plans["milp"]
    if g is not None:
        assert m is not None and m.started_gpus >= g.started_gpus
        if m.started_gpus == g.started_gpus:
            assert m.displaced_gpu_h <= g.displaced_gpu_h + 0.01


def test_dra_objects_without_the_cel_extra_are_one_line_naming_the_extra(nori, tmp_path, monkeypatch):
    """The base install has no cel-python: a snapshot whose DeviceClass selects by CEL must say
    which extra reads it, in one line with exit 2, not fail deep inside the analysis."""
    import json

    from typer.testing import CliRunner

    import gpufleet.adapters.kubernetes.cel as cel
    from gpufleet.cli.main import app

    n = copy.deepcopy(nori)
    n["metadata"]["name"] = "ipp1-0033"
    del n["status"]["capacity"]["nvidia.com/gpu"], n["status"]["allocatable"]["nvidia.com/gpu"]
    objs = [n, *real("dra/deviceclasses.json")["items"], *real("dra/resourceslice-nvidia.json")["items"],
            *real("dra/claimtemplates.json")["items"], *real("dra/pods.json")["items"]]
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    monkeypatch.setattr(cel, "celpy", None)
    cel._program.cache_clear()
    res = CliRunner().invoke(app, ["k8s", "analyze", str(path)])
    cel._program.cache_clear()
    assert res.exit_code == 2, res.output
    assert len(res.output.strip().splitlines()) == 1
    assert "pip install 'gpufleet[k8s]'" in res.output


def test_a_named_profile_decides_the_snapshot(cluster_dir):
    """gpu-pod-2 waits behind gpu-pod (module's first test). gang-conservative, the default,
    reserves nori for it at gpu-pod's end, 2025-03-20T22:00:05Z; gang-bestfit makes no
    reservations, so the same snapshot gives it no estimated start."""
    snap = load(cluster_dir)
    assert gang(analyze(snap, assume_runtime_s=24 * 3600), "default/gpu-pod-2").estimated_start == epoch(
        "2025-03-20T22:00:05Z")
    g = gang(analyze(snap, assume_runtime_s=24 * 3600, profile="gang-bestfit"), "default/gpu-pod-2")
    assert g.code == "UNSCHEDULABLE" and g.estimated_start is None


def test_evicting_a_gang_with_two_pods_on_one_node_frees_both_pods_gpus(nori):
    """Node a runs JobSet r: two 4-GPU pods, 1 h (8 GPUs × 1 h = 8 GPU-h); node b runs pod s on
    4 GPUs for 3 h (12 GPU-h) and has 4 free. An 8-GPU pod fits on a once r goes (4 + 4 GPUs
    freed there) or on b once s goes: the fix offered is the cheaper, r's 8 GPU-h, not s's 12."""
    run = []
    for name, node, start in (("r-0", "a", "22"), ("r-1", "a", "22"), ("s", "b", "20")):
        p = _gpu_pod(name, gpus="4")
        p["spec"]["nodeName"] = node
        p["status"] = {"phase": "Running", "startTime": f"2025-03-19T{start}:18:09Z"}
        if name.startswith("r-"):
            p["metadata"]["labels"] = {"jobset.sigs.k8s.io/jobset-name": "r"}
        run.append(p)
    an = analyze(_snap([_eight_gpu(nori, "a"), _eight_gpu(nori, "b")], [*run, _gpu_pod("big", gpus="8")]))
    fixes = [(f.what, f.displaced_gpu_h) for f in gang(an, "t/big").fixes]
    assert fixes == [("evict t/r to place on a", 8.0)]
