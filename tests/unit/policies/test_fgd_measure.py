import dataclasses

import numpy as np
import pytest

from gpufleet.policies.fgd.measure import (
    FragClass,
    FragTable,
    classify,
    frag_reference,
    make_typical,
    typical_pods,
)

# FGD's own unit-test target workloads (kubernetes-scheduler-simulator pkg/utils/frag_test.go:13-90):
# rows are (cpu milli, per-GPU milli, GPU count, allowed model, popularity in percent).
TYPICAL_PODS = [
    (6000, 465, 1, "", 9.33), (8000, 440, 1, "2080", 9.15), (8000, 475, 1, "T4", 8.76),
    (8000, 440, 1, "P100", 8.72), (2000, 465, 1, "", 8.68), (12000, 900, 1, "", 8.65),
    (4000, 900, 1, "", 8.43), (16000, 678, 1, "T4", 8.36), (8000, 500, 1, "", 8.29),
    (6000, 511, 1, "", 8.11), (14000, 1000, 2, "2080", 0.54), (4000, 1000, 1, "2080", 0.43),
    (32000, 1000, 2, "T4", 0.43), (16000, 1000, 1, "V100M16", 0.40), (64000, 1000, 2, "", 0.40),
    (10000, 1000, 2, "", 0.40), (11400, 1000, 1, "T4", 0.36), (16000, 1000, 1, "T4", 0.36),
    (4000, 1000, 2, "", 0.36), (14000, 1000, 2, "V100M16", 0.36), (8000, 1000, 4, "", 0.36),
    (16000, 1000, 2, "", 0.32), (2000, 1000, 1, "T4", 0.32), (6000, 1000, 1, "", 0.32),
    (4000, 1000, 1, "", 0.32), (5000, 1000, 1, "", 0.32), (32000, 1000, 4, "V100M16", 0.32),
    (32000, 1000, 2, "", 0.32), (24000, 1000, 8, "2080", 0.32), (40000, 1000, 4, "", 0.29),
    (32000, 1000, 8, "", 0.29), (32000, 1000, 1, "T4", 0.29), (16000, 1000, 1, "", 0.25),
    (7000, 1000, 1, "V100M16", 0.25), (24000, 1000, 1, "T4", 0.25),
]

TYPICAL_PODS_WITH_NON_GPU = [
    (15700, 1000, 1, "", 28.69), (11900, 1000, 1, "", 18.93), (11400, 1000, 1, "", 12.27),
    (1000, 0, 0, "", 7.36), (18710, 1000, 1, "", 4.85), (8200, 1000, 1, "", 3.79),
    (16400, 1000, 1, "", 3.31), (9810, 1000, 1, "", 1.97), (15200, 1000, 1, "", 1.87),
    (11200, 1000, 1, "", 1.81), (14200, 1000, 1, "", 1.76), (12000, 0, 0, "", 1.65),
    (14900, 1000, 1, "", 1.39), (60200, 1000, 4, "", 1.23), (64200, 1000, 8, "", 1.07),
    (32200, 1000, 4, "", 1.01), (17400, 1000, 2, "", 0.91), (30200, 1000, 2, "", 0.69),
    (16000, 1000, 1, "", 0.64), (15000, 1000, 1, "", 0.59), (64000, 1000, 8, "", 0.53),
    (15000, 0, 0, "", 0.53), (11910, 1000, 1, "", 0.53), (120200, 1000, 8, "", 0.48),
    (11300, 1000, 1, "", 0.37), (30000, 1000, 2, "", 0.32), (9800, 1000, 1, "", 0.32),
    (8000, 1000, 1, "", 0.32), (2000, 1000, 1, "", 0.27), (2000, 80, 1, "", 0.27),
    (1000, 1000, 1, "", 0.27),
]


def typical(rows):
    return make_typical([(c, m, k, frozenset([s]) if s else frozenset(), p / 100) for c, m, k, s, p in rows])


def vectorised(t, cpu_left, free, model):
    table = FragTable(t, (model, "other"), 8)
    row = np.zeros((1, 8), dtype=np.int64)
    row[0, : len(free)] = free
    return float(table.frag(np.array([0]), np.array([cpu_left]), row)[0])


# FGD's own unit-test values (pkg/utils/frag_test.go), see /work/shared/reference/fgd.md.
VECTORS = [
    (TYPICAL_PODS, 1000, [200, 1000, 1000, 500], "1080", 2566.62),
    (TYPICAL_PODS, 1000, [1000] * 4, "1080", 3802.40),
    (TYPICAL_PODS, 1000, [1000] * 8, "1080", 7604.80),
    (TYPICAL_PODS_WITH_NON_GPU, 64000, [1000] * 8, "P100", 887.20),
    (TYPICAL_PODS_WITH_NON_GPU, 32000, [1000] * 4 + [0] * 4, "P100", 554.4),
    (TYPICAL_PODS_WITH_NON_GPU, 0, [1000] * 4 + [0] * 4, "P100", 4000.0),
    (TYPICAL_PODS[:1], 1000, [200, 1000, 1000, 500], "1080", 251.91),
]
VECTOR_IDS = [
    "a used 4-gpu 1080 node short of cpu fragments 2566.62",
    "an idle 4-gpu 1080 node short of cpu fragments 3802.40",
    "an idle 8-gpu 1080 node short of cpu fragments 7604.80",
    "an empty 8xP100 node with 64 cpus fragments 887.20",
    "a half used 8xP100 node with 32 cpus fragments 554.4",
    "a half used 8xP100 node without cpu fragments all 4000",
    "one typical pod short of cpu counts all 2700 idle milli at 9.33 percent",
]


@pytest.mark.parametrize(("rows", "cpu_left", "free", "model", "expected"), VECTORS, ids=VECTOR_IDS)
def test_the_definition_reproduces_fgds_unit_test_values(rows, cpu_left, free, model, expected):
    assert frag_reference(cpu_left, free, model, typical(rows)) == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize(("rows", "cpu_left", "free", "model", "expected"), VECTORS, ids=VECTOR_IDS)
def test_the_vectorised_form_reproduces_fgds_unit_test_values(rows, cpu_left, free, model, expected):
    assert vectorised(typical(rows), cpu_left, free, model) == pytest.approx(expected, abs=0.01)


def test_a_task_short_of_cpu_on_a_node_with_room_on_its_gpus_is_q4():
    assert classify(1000, [200, 1000, 1000, 500], "1080", 6000, 465, 1, frozenset()) is FragClass.Q4_LACK_CPU


@pytest.mark.parametrize(("cpu_left", "free", "model", "task", "expected"), [
    (8000, [1000], "T4", (4000, 500, 1, frozenset()), FragClass.Q3_SATISFIED),
    (8000, [400], "T4", (4000, 500, 1, frozenset()), FragClass.Q2_LACK_GPU),
    (1000, [400], "T4", (4000, 500, 1, frozenset()), FragClass.Q1_LACK_BOTH),
    (8000, [1000], "T4", (4000, 500, 1, frozenset({"P100"})), FragClass.NO_ACCESS),
    (8000, [1000, 1000], "T4", (4000, 1000, 3, frozenset()), FragClass.Q2_LACK_GPU),
    (8000, [], "", (4000, 0, 0, frozenset()), FragClass.XL_SATISFIED),
    (1000, [], "", (4000, 0, 0, frozenset()), FragClass.XR_LACK_CPU),
], ids=[
    "a fitting task is satisfied",
    "a task without a gpu share large enough lacks gpu",
    "a task without cpu or gpu lacks both",
    "a task constrained to another model has no access",
    "a whole-gpu task needs that many fully free gpus",
    "a cpu-only task with cpu is XL",
    "a cpu-only task without cpu is XR",
])
def test_classification_follows_fgds_quadrants(cpu_left, free, model, task, expected):
    assert classify(cpu_left, free, model, *task) is expected


def test_a_fitting_sharing_task_counts_only_gpus_whose_free_share_is_too_small():
    t = make_typical([(1000, 500, 1, frozenset(), 1.0)])
    assert frag_reference(8000, [300, 700, 1000, 499], "T4", t) == 799


def test_typical_pods_cover_95_percent_by_popularity_and_renormalise():
    cpu = np.array([1000] * 50 + [2000] * 46 + [3000] * 4)
    milli = np.array([500] * 50 + [1000] * 46 + [0] * 4)
    count = np.array([1] * 96 + [0] * 4)
    t = typical_pods(cpu, milli, count, (frozenset(),) * 100)
    assert t.milli.tolist() == [500, 1000]
    assert t.p.tolist() == pytest.approx([50 / 96, 46 / 96])


def test_typical_pods_count_zero_cpu_as_the_kubernetes_non_zero_request():
    t = typical_pods(np.array([0]), np.array([0]), np.array([0]), (frozenset(),))
    assert t.cpu.tolist() == [100]


def test_the_vectorised_form_agrees_with_the_definition_on_random_nodes():
    rng = np.random.default_rng(7)
    rows = TYPICAL_PODS + TYPICAL_PODS_WITH_NON_GPU
    t = typical(rows)
    models = ("1080", "T4", "P100", "V100M16", "2080")
    table = FragTable(t, models, 8)
    n = 300
    model_idx = rng.integers(len(models), size=n)
    cpu = rng.integers(0, 70000, size=n)
    ngpu = rng.choice([1, 2, 4, 8], size=n)
    free = rng.choice([0, 40, 190, 465, 500, 535, 900, 1000], size=(n, 8))
    free[np.arange(8)[None, :] >= ngpu[:, None]] = 0
    got = table.frag(model_idx, cpu, free)
    want = [frag_reference(int(cpu[i]), free[i, : ngpu[i]].tolist(), models[model_idx[i]], t)
            for i in range(n)]
    assert got == pytest.approx(want, abs=1e-6)


def test_typical_pods_stop_at_exactly_95_percent():
    """95 of 100 pods share one spec: they cover exactly 95 % (>= the threshold), so the 5 others are
    left out and the one typical spec has popularity 95/95 = 1."""
    cpu = np.array([1000] * 95 + [2000] * 5)
    milli = np.array([500] * 95 + [1000] * 5)
    count = np.ones(100, dtype=np.int64)
    t = typical_pods(cpu, milli, count, (frozenset(),) * 100)
    assert t.cpu.tolist() == [1000]
    assert t.p.tolist() == [1.0]


def test_typical_pods_are_ranked_most_popular_first():
    """3 pods of a 2-CPU spec arrive after 1 pod of a 1-CPU spec: the 2-CPU spec is the most popular
    (3 of 4 = 75 %) and comes first; the 1-CPU spec then brings the cover to 100 %."""
    cpu = np.array([1000, 2000, 2000, 2000])
    t = typical_pods(cpu, np.full(4, 500), np.ones(4, dtype=np.int64), (frozenset(),) * 4)
    assert t.cpu.tolist() == [2000, 1000]
    assert t.p.tolist() == [0.75, 0.25]


@pytest.mark.parametrize("order", [[1000, 2000], [2000, 1000]], ids=["small spec first", "large spec first"])
def test_equally_popular_specs_are_cut_the_same_way_whatever_order_the_pods_arrive_in(order):
    """Two specs with one pod each and a 50 % threshold: one spec is enough (1 of 2 pods), and it is
    the smaller spec (1 CPU) however the trace lists them, so the cut is deterministic."""
    t = typical_pods(np.array(order), np.full(2, 500), np.ones(2, dtype=np.int64), (frozenset(),) * 2,
                     threshold=0.5)
    assert t.cpu.tolist() == [1000]
    assert t.p.tolist() == [1.0]


def test_typical_pods_refuse_columns_of_different_lengths():
    with pytest.raises(ValueError):
        typical_pods(np.array([1000, 2000]), np.array([500]), np.array([1]), (frozenset(),))


@pytest.mark.parametrize(("cpu", "milli", "expected"), [
    (4000, 500, FragClass.Q3_SATISFIED), (4000, 0, FragClass.XL_SATISFIED),
], ids=["a gpu task", "a cpu-only task"])
def test_a_task_asking_exactly_the_cpu_left_is_satisfied(cpu, milli, expected):
    assert classify(4000, [1000], "T4", cpu, milli, 1 if milli else 0, frozenset()) is expected


def test_the_classes_carry_fgds_quadrant_labels():
    """The labels of FGD's `GetNodePodFrag` (kubernetes-scheduler-simulator pkg/utils/frag.go:556-582,
    /work/shared/reference/fgd.md): quadrants Q1-Q4, CPU-only XL/XR, and NoAccess."""
    assert [c.value for c in FragClass] == ["Q1", "Q2", "Q3", "Q4", "XL", "XR", "NoAccess"]


def test_a_target_workload_cannot_be_altered_once_built():
    t = make_typical([(1000, 500, 1, frozenset(), 1.0)])
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.p = np.array([0.5])  # type: ignore[misc]


def test_a_frag_table_keeps_the_workload_the_fgd_policies_read_back():
    t = make_typical([(1000, 500, 1, frozenset(), 1.0)])
    assert FragTable(t, ("T4",), 8).typical is t


@pytest.mark.parametrize(("free", "expected"), [
    ([1000] * 8, 0.0), ([1000] * 7 + [0], 7000.0),
], ids=["all 8 gpus free fragment nothing", "7 free gpus are all fragment"])
def test_an_8_gpu_task_fits_only_a_node_with_8_free_gpus(free, expected):
    """An 8-GPU whole-GPU spec (popularity 1) on an 8-GPU T4 node with CPU to spare: with 8 free GPUs
    it fits and no free GPU is below its 1000 milli (fragment 0); with 7 it lacks a GPU, so all
    7 x 1000 idle milli are fragment."""
    t = make_typical([(1000, 1000, 8, frozenset(), 1.0)])
    assert frag_reference(8000, free, "T4", t) == expected
    assert vectorised(t, 8000, free, "T4") == expected


def test_a_task_wider_than_every_node_never_fits():
    """A 16-GPU spec on a fleet of at most 8 GPUs per node: every idle milli (8 x 1000) is fragment."""
    t = make_typical([(1000, 1000, 16, frozenset(), 1.0)])
    assert vectorised(t, 8000, [1000] * 8, "T4") == 8000.0


def test_a_spec_with_a_gpu_count_but_no_gpu_share_counts_as_cpu_only():
    """r_m = 0 makes a spec CPU-only in FGD's definition whatever its count (fgd.md): with
    popularity 1, all 1000 + 500 idle milli are fragment, in both forms."""
    t = make_typical([(1000, 0, 1, frozenset(), 1.0)])
    assert frag_reference(8000, [1000, 500], "T4", t) == 1500.0
    assert vectorised(t, 8000, [1000, 500], "T4") == 1500.0


def test_the_multi_gpu_part_of_several_candidate_states_per_node_agrees_with_one_state_at_a_time():
    """FGD's gradient scores every candidate placement in one call: N(r) and S(r) shaped
    (nodes, candidates). Each column must equal the plain per-node call for that candidate."""
    t = typical(TYPICAL_PODS)
    table = FragTable(t, ("2080", "T4"), 8)
    model_idx, cpu = np.array([0, 1]), np.array([64000, 20000])
    free = np.array([[[1000] * 8, [1000] * 4 + [0] * 4, [500] * 8],
                     [[1000] * 2 + [0] * 6, [1000] * 8, [0] * 8]])  # (nodes, candidates, gpus)
    n_at = {r: (free >= r).sum(axis=2) for r, _, _ in table.multi}
    s_at = {r: np.where(free >= r, free, 0).sum(axis=2) for r, _, _ in table.multi}
    together = table.multi_part(model_idx, cpu, n_at, s_at)
    assert together[0, 0] > 0  # an idle 8-GPU 2080 node with 64 CPUs fits several multi-GPU specs
    for c in range(3):
        one = table.multi_part(model_idx, cpu, {r: v[:, c] for r, v in n_at.items()},
                               {r: v[:, c] for r, v in s_at.items()})
        assert together[:, c].tolist() == pytest.approx(one.tolist())
