import gc
from dataclasses import dataclass

import numpy as np
import pytest

from gpufleet.policies.fgd import OURS, POLICIES
from gpufleet.policies.fgd.cluster import ClusterState, PodRequest
from gpufleet.policies.fgd.gradient import fgd_score, gradient
from gpufleet.policies.fgd.measure import FragTable, make_typical

MODELS = ("G2", "T4")


@dataclass
class Nodes:
    names: tuple
    cpu_milli: np.ndarray
    memory_mib: np.ndarray
    gpus: np.ndarray
    model: tuple


def cluster(specs, typical_rows=((4000, 500, 1, frozenset(), 0.5), (8000, 1000, 1, frozenset(), 0.5))):
    """specs: (cpu, gpus, model) per node, in priority order."""
    nodes = Nodes(tuple(f"n{i}" for i in range(len(specs))), np.array([s[0] for s in specs]),
                  np.full(len(specs), 10**6), np.array([s[1] for s in specs]), tuple(s[2] for s in specs))
    table = FragTable(make_typical(list(typical_rows)), MODELS, int(nodes.gpus.max()))
    return ClusterState(nodes, np.arange(len(specs)), MODELS, table)


def pod(cpu=1000, count=1, milli=500, allowed=(True, True)):
    return PodRequest(cpu=cpu, mem=1, count=count, milli=milli, allowed=np.array(allowed))


def place(state, name, p, rng=None):
    cand = state.feasible(p)
    node, gpus = POLICIES[name].choose(state, p, cand, rng or np.random.default_rng(0))
    state.apply(node, gpus, p)
    return node, gpus.tolist()


def test_the_integer_sigmoid_score_matches_the_values_fgd_documents():
    assert fgd_score(np.array([0.0, 100.0, 500.0, -1000.0, -np.inf])).tolist() == [50, 52, 62, 26, -1]


def test_the_gradient_equals_the_fragmentation_drop_of_the_placement_for_every_gpu():
    rng = np.random.default_rng(3)
    state = cluster([(96000, 8, "G2"), (20000, 2, "T4"), (5000, 8, "G2")])
    state.gpu_free[:] = np.where(state.gpu_exists, rng.choice([0, 100, 500, 1000], size=(3, 8)), 0)
    state.frag = state.table.frag(state.model_idx, state.cpu_left, state.gpu_free)
    for p in (pod(milli=300), pod(cpu=3000, milli=450), pod(count=2, milli=1000), pod(count=0, milli=0)):
        cand = state.feasible(p)
        delta = gradient(state, p, cand)
        for i, node in enumerate(cand):
            gpus = range(state.max_gpus) if p.is_share else [None]
            for j in gpus:
                free = state.gpu_free[node].copy()
                if p.is_share:
                    if free[j] < p.milli:
                        assert delta[i, j] == -np.inf
                        continue
                    free[j] -= p.milli
                else:
                    free[np.flatnonzero(free >= p.milli)[: p.count]] -= p.milli
                cpu_after = state.cpu_left[[node]] - p.cpu
                after = state.table.frag(state.model_idx[[node]], cpu_after, free[None])[0]
                got = delta[i, j] if p.is_share else delta[i]
                assert got == pytest.approx(state.frag[node] - after)


def test_feasibility_checks_model_cpu_memory_and_gpu_room():
    state = cluster([(8000, 8, "G2"), (96000, 2, "T4"), (96000, 8, "G2")])
    state.gpu_free[2, :] = 400
    assert state.feasible(pod(cpu=9000)).tolist() == [1]
    assert state.feasible(pod(allowed=(False, True))).tolist() == [1]
    assert state.feasible(pod(count=4, milli=1000)).tolist() == [0]
    assert state.feasible(pod(count=0, milli=0, cpu=50000)).tolist() == [1, 2]


def test_fgd_puts_a_sharing_pod_beside_another_instead_of_opening_a_fresh_gpu():
    state = cluster([(96000, 2, "T4"), (96000, 2, "T4")])
    assert place(state, "fgd", pod()) == (0, [0])
    assert place(state, "fgd", pod()) == (0, [0])
    assert state.gpu_free[0].tolist() == [0, 1000]


def test_gpupacking_prefers_the_partly_used_gpu_and_leaves_empty_nodes_alone():
    state = cluster([(96000, 2, "T4"), (96000, 2, "T4")])
    state.apply(1, np.array([1]), pod(milli=300))
    assert place(state, "gpupacking", pod(milli=500)) == (1, [1])


def test_gpuclustering_keeps_whole_gpu_pods_off_nodes_hosting_sharing_pods():
    state = cluster([(96000, 8, "G2"), (96000, 8, "G2")])
    state.apply(0, np.array([0]), pod(milli=300))
    assert place(state, "gpuclustering", pod(count=1, milli=1000))[0] == 1


def test_bestfit_and_dotprod_prefer_the_fuller_node():
    for name in ("bestfit", "dotprod"):
        state = cluster([(96000, 8, "G2"), (96000, 8, "G2")])
        state.apply(1, np.array([0, 1, 2]), pod(count=3, milli=1000))
        assert place(state, name, pod(count=1, milli=1000))[0] == 1, name


def test_random_places_only_on_feasible_nodes_and_is_reproducible_per_seed():
    picks = []
    for _ in range(2):
        state = cluster([(96000, 8, "G2"), (1000, 8, "G2"), (96000, 2, "T4")])
        rng = np.random.default_rng(5)
        picks.append([place(state, "random", pod(cpu=2000), rng)[0] for _ in range(6)])
    assert picks[0] == picks[1]
    assert 1 not in picks[0]


def test_score_ties_go_to_the_first_node_in_priority_order():
    state = cluster([(96000, 8, "G2"), (96000, 8, "G2")])
    for name in ("fgd", "gpupacking", "gpuclustering", "bestfit"):
        fresh = cluster([(96000, 8, "G2"), (96000, 8, "G2")])
        assert place(fresh, name, pod(count=1, milli=1000))[0] == 0, name
    assert state.feasible(pod()).tolist() == [0, 1]


def test_our_policy_sends_cpu_only_pods_to_the_node_with_cpu_to_spare():
    state = cluster([(96000, 8, "G2"), (96000, 2, "T4")])
    assert place(state, OURS, pod(cpu=8000, count=0, milli=0))[0] == 1


def test_every_policy_has_a_distinct_command_line_name():
    assert set(POLICIES) >= {"random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd", OURS}


def test_fgdbal_reads_kappa_from_the_table_it_is_given_even_when_an_old_tables_id_is_reused():
    """Node 0: 10,000 CPU milli, 8 free GPUs; node 1: 4,000 CPU milli, no GPU. A CPU-only pod (1,000
    milli) goes where CPU slack s = (c - 1000) - kappa * free GPU milli is largest:
    s0 = 9000 - 8000 kappa, s1 = 3000. With a target workload of (0 CPU, 1 GPU) kappa = 0 and node 0
    wins; with (8000 CPU, 1 GPU) kappa = 8 and node 1 wins. Tables are built and dropped in turn, so
    CPython hands a new table the address of a dead one: a cache keyed by id() answers with the
    dead table's kappa."""
    policy = POLICIES["fgdbal"]
    cpu_only = PodRequest(cpu=1000, mem=1, count=0, milli=0, allowed=np.array([True, True]))
    for i in range(40):
        kappa_high = i % 2 == 1
        state = cluster([(10000, 8, "G2"), (4000, 0, "G2")],
                        typical_rows=((8000 if kappa_high else 0, 1000, 1, frozenset(), 1.0),))
        node, _ = policy.choose(state, cpu_only, state.feasible(cpu_only), np.random.default_rng(0))
        assert node == (1 if kappa_high else 0), f"round {i}"
        del state
        gc.collect()


# ---- multi-GPU fractional pods (k GPUs at r < 1000 milli each) ------------------------------------

WHOLE_GPU_WORKLOAD = ((100, 1000, 1, frozenset(), 1.0),)


def test_two_half_gpus_on_an_empty_node_leave_a_fragment_of_one_gpu():
    """Target workload: one whole GPU (p = 1). An empty 8-GPU node has no fragment (every free GPU
    serves it). A 2 × 500-milli pod leaves GPUs [500, 500, 1000 × 6]: the two half GPUs cannot host
    a whole-GPU task, F_n' = 500 + 500 = 1000, so Delta = 0 - 1000 = -1000 (not 0)."""
    state = cluster([(96000, 8, "G2")], typical_rows=WHOLE_GPU_WORKLOAD)
    p = pod(count=2, milli=500)
    assert gradient(state, p, state.feasible(p)).tolist() == [-1000.0]


def test_fgd_completes_half_used_gpus_with_a_two_half_gpu_pod():
    """Node 0 has GPUs [500, 500, 1000 × 6] (F = 1000 against a whole-GPU workload), node 1 is empty
    (F = 0). FGD's n' takes the k GPUs with room in ascending free order: on node 0 the two halves,
    500 - 500 = 0, so F_0' = 0 and Delta = +1000; on node 1 Delta = -1000 (previous test). FGD
    picks node 0 and GPUs 0 and 1."""
    state = cluster([(96000, 8, "G2"), (96000, 8, "G2")], typical_rows=WHOLE_GPU_WORKLOAD)
    state.apply(0, np.array([0, 1]), pod(count=2, milli=500))
    p = pod(count=2, milli=500)
    assert gradient(state, p, state.feasible(p)).tolist() == [1000.0, -1000.0]
    assert place(state, "fgd", p) == (0, [0, 1])


def test_the_multi_gpu_share_gradient_equals_the_fragmentation_drop_of_fgds_own_placement():
    """For random nodes, Delta = F_n - F_n' where n' subtracts r from the k GPUs with room in
    ascending free-milli order (index order on ties), as FGD's NodeResource.Sub does."""
    rng = np.random.default_rng(5)
    state = cluster([(96000, 8, "G2"), (20000, 2, "T4"), (50000, 8, "G2"), (96000, 8, "G2")])
    state.gpu_free[:] = np.where(state.gpu_exists, rng.choice([0, 200, 500, 700, 1000], size=(4, 8)), 0)
    state.frag = state.table.frag(state.model_idx, state.cpu_left, state.gpu_free)
    for p in (pod(count=2, milli=500), pod(count=3, milli=200, cpu=3000)):
        cand = state.feasible(p)
        delta = gradient(state, p, cand)
        for i, node in enumerate(cand):
            free = state.gpu_free[node].copy()
            with_room = [j for j in range(state.max_gpus) if free[j] >= p.milli]
            for j in sorted(with_room, key=lambda j: (free[j], j))[: p.count]:
                free[j] -= p.milli
            after = state.table.frag(state.model_idx[[node]], state.cpu_left[[node]] - p.cpu, free[None])[0]
            assert delta[i] == pytest.approx(state.frag[node] - after)
