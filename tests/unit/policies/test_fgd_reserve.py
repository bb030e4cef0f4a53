"""fgdres (our policy): invariants, and two hand-built cases where it provably beats FGD."""

from dataclasses import dataclass

import numpy as np
import pytest

from gpufleet.policies.fgd import OURS, POLICIES
from gpufleet.policies.fgd.cluster import ClusterState, PodRequest
from gpufleet.policies.fgd.measure import FragTable, make_typical
from gpufleet.policies.fgd.reserve import FgdReservePolicy, model_pressure
from gpufleet.studies.fragbench import Workload, run_once
from gpufleet.traces.openb import read_nodes, read_pods

ANY = frozenset()


@dataclass
class Nodes:
    names: tuple
    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    gpus: np.ndarray
    model: tuple


def cluster(specs, typical_rows, models, memory=10**6):
    """specs: (cpu, gpus, model) per node, in priority order (row 0 wins ties)."""
    nodes = Nodes(tuple(f"n{i}" for i in range(len(specs))), np.array([s[0] for s in specs]),
                  np.full(len(specs), memory), np.array([s[1] for s in specs]), tuple(s[2] for s in specs))
    table = FragTable(make_typical(list(typical_rows)), models, int(nodes.gpus.max()))
    return ClusterState(nodes, np.arange(len(specs)), models, table)


def pod(cpu=1000, count=1, milli=1000, allowed=(True, True), mem=1):
    return PodRequest(cpu=cpu, mem=mem, count=count, milli=milli, allowed=np.array(allowed))


def place(state, name, p):
    """Place p with policy `name`; None if it fits nowhere (the experiment's permanent failure)."""
    cand = state.feasible(p)
    if not len(cand):
        return None
    node, gpus = POLICIES[name].choose(state, p, cand, np.random.default_rng(0))
    state.apply(node, gpus, p)
    return node


def test_fgdres_is_our_default_policy_and_is_registered_under_its_own_name():
    assert OURS == "fgdres"
    assert isinstance(POLICIES["fgdres"], FgdReservePolicy)
    assert {"fgd", "fgdbal", "fgdres"} <= set(POLICIES)


def test_pressure_is_the_constrained_demand_share_over_the_models_gpu_share():
    """A: 1000 milli x1, any model, p 0.5; B: 500 milli x2 on {V100}, p 0.25; C: 1000 x1 on
    {V100, T4}, p 0.25. Demand v = 500, 250, 250 (total 1000). GPUs: G2 6, V100 2, T4 2 (of 10).
    d_V100 = 250 + 250 * 2/4 = 375, d_T4 = 125: pi_V100 = 0.375 / 0.2 = 1.875, pi_T4 = 0.125 / 0.2
    = 0.625, pi_G2 = 0 (nothing is restricted to it)."""
    models = ("G2", "T4", "V100")
    typical = make_typical([(1000, 1000, 1, ANY, 0.5), (1000, 500, 2, frozenset({"V100"}), 0.25),
                            (1000, 1000, 1, frozenset({"V100", "T4"}), 0.25)])
    table = FragTable(typical, models, 2)
    got = model_pressure(table, models, np.array([6.0, 2.0, 2.0]))
    assert got == pytest.approx([0.0, 0.625, 1.875])


def test_without_model_constraints_every_pressure_is_zero():
    typical = make_typical([(1000, 1000, 1, ANY, 0.7), (2000, 300, 1, ANY, 0.2), (4000, 0, 0, ANY, 0.1)])
    assert model_pressure(FragTable(typical, ("G2", "T4"), 8), ("G2", "T4"), np.array([8.0, 2.0])).tolist() \
        == [0.0, 0.0]


def test_fgdres_keeps_the_scarce_model_for_the_pod_that_needs_it_where_fgd_strands_that_pod():
    """Nodes: n0 V100 and n1 G2, one GPU and 8 CPU each, n0 first. Typical pods: A = 1 GPU any
    model (p 0.98), B = 1 GPU on V100 only (p 0.02). An A pod arrives, then a B pod.

    FGD on the A pod: n0: both specs fit before, nothing is idle after: Delta = 0, score 50.
    n1: B has no access, F = 0.02 x 1000 = 20 before and 0 after: Delta = 20, score
    floor(100 sigmoid(0.02)) = floor(50.49) = 50. A tie, so the first node, n0 (V100), wins, and
    the B pod then fits nowhere: 1000 milli lost.
    fgdres: pi_V100 = (20 / 1000) / (1 / 2) = 0.04, so n0 scores 50 - 5 x 0.04 x 1 = 49.8 < 50:
    the A pod goes to n1 and the B pod to n0; nothing is lost."""
    rows = [(1000, 1000, 1, ANY, 0.98), (1000, 1000, 1, frozenset({"V100"}), 0.02)]
    a, b = pod(), pod(allowed=(False, True))
    outcome = {}
    for name in ("fgd", "fgdres"):
        state = cluster([(8000, 1, "V100"), (8000, 1, "G2")], rows, ("G2", "V100"))
        outcome[name] = (place(state, name, a), place(state, name, b))
    assert outcome["fgd"] == (0, None)
    assert outcome["fgdres"] == (1, 0)


def test_fgdres_puts_a_cpu_only_pod_on_the_gpu_full_node_where_fgd_strands_a_free_gpu():
    """Two G2 nodes with one GPU and 20 CPU; n1's GPU is already taken. Typical: one spec,
    8 CPU + 1 GPU (kappa = 8 CPU milli per GPU milli). A 10-CPU CPU-only pod arrives, then a
    12-CPU 1-GPU pod.

    FGD: on n0 the spec still fits after (10 >= 8 CPU), on n1 nothing is idle: Delta = 0 on both,
    score 50, tie to n0. n0 keeps 10 CPU, too few for the GPU pod, and n1 has no GPU: it fails.
    fgdres: spare CPU after keeping 4 kappa = 32 CPU per free GPU: n0 10000 - 4 x 8 x 1000 =
    -22000, n1 10000 - 0 = 10000, so n1 takes the CPU pod and the GPU pod fits on n0 (20 CPU)."""
    rows = [(8000, 1000, 1, ANY, 1.0)]
    cpu_pod, gpu_pod = pod(cpu=10000, count=0, milli=0), pod(cpu=12000)
    outcome = {}
    for name in ("fgd", "fgdres"):
        state = cluster([(20000, 1, "G2"), (20000, 1, "G2")], rows, ("G2", "V100"))
        state.apply(1, np.array([0]), pod(cpu=0))
        outcome[name] = (place(state, name, cpu_pod), place(state, name, gpu_pod))
    assert outcome["fgd"] == (0, None)
    assert outcome["fgdres"] == (1, 0)


def test_fgdres_never_overcommits_gpu_milli_cpu_or_memory_on_a_random_stream():
    rng = np.random.default_rng(11)
    models = ("G2", "T4", "V100")
    rows = [(4000, 500, 1, ANY, 0.3), (12000, 1000, 1, ANY, 0.3), (8000, 1000, 1, frozenset({"V100"}), 0.1),
            (3000, 810, 1, frozenset({"T4"}), 0.1), (32000, 1000, 4, ANY, 0.1), (6000, 0, 0, ANY, 0.1)]
    state = cluster([(96000, 8, "G2"), (20000, 2, "T4"), (32000, 4, "V100"), (64000, 8, "G2"),
                     (8000, 1, "V100")], rows, models, memory=200_000)
    policy = POLICIES["fgdres"]
    shapes = [(0, 0), (1, 1000), (1, 300), (1, 810), (1, 470), (2, 1000), (4, 1000), (8, 1000)]
    placed = 0
    for _ in range(300):
        count, milli = shapes[rng.integers(len(shapes))]
        allowed = rng.random(3) < 0.8 if rng.random() < 0.3 else np.ones(3, bool)
        p = PodRequest(cpu=int(rng.integers(0, 24)) * 1000, mem=int(rng.integers(1, 20_000)), count=count,
                       milli=milli, allowed=allowed)
        cand = state.feasible(p)
        if not len(cand):
            continue
        node, gpus = policy.choose(state, p, cand, rng)
        assert node in cand
        assert len(gpus) == count and len(set(gpus.tolist())) == count
        assert np.all(state.gpu_free[node, gpus] >= milli) and np.all(state.gpu_exists[node, gpus])
        state.apply(node, gpus, p)
        placed += 1
        assert state.cpu_left.min() >= 0 and state.mem_left.min() >= 0 and state.gpu_free.min() >= 0
    assert placed > 20
    assert state.frag == pytest.approx(state.table.frag(state.model_idx, state.cpu_left, state.gpu_free))


NODE_SHAPES = [(96000, 8, "G2")] * 3 + [(104000, 2, "T4")] * 3 + [(32000, 4, "V100M16")] * 2
NODES = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
    f"n{i},{c},262144,{g},{m}\n" for i, (c, g, m) in enumerate(NODE_SHAPES))


def test_the_same_seed_gives_fgdres_the_same_run(tmp_path):
    rows = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec"]
    shapes = [(4000, 1, 500, ""), (11000, 1, 1000, ""), (12000, 0, 0, ""), (3000, 1, 810, "T4"),
              (11000, 1, 1000, "V100M16"), (64000, 8, 1000, "")]
    rows += [f"p{i:03d},{c},1024,{k},{m},{s}" for i, (c, k, m, s) in enumerate(shapes * 6)]
    (tmp_path / "n.csv").write_text(NODES)
    (tmp_path / "p.csv").write_text("\n".join(rows) + "\n")
    work = Workload(read_nodes(tmp_path / "n.csv"), read_pods(tmp_path / "p.csv"))
    a, b = (run_once(work, POLICIES["fgdres"], 42) for _ in range(2))
    assert np.array_equal(a.used_milli, b.used_milli) and np.array_equal(a.frag_milli, b.frag_milli)
    assert a.used_milli[-1] <= work.capacity_milli
