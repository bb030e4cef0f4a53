"""The shared placement parts: node filters return masks, scorers return vectors or picks.

Table for every test: 2 leaves × 2 nodes × 8 GPUs (n0000, n0001 | n0002, n0003) with 6, 3, 0
and 0 GPUs taken, so free GPUs per node are 2, 5, 8, 8.
"""

from dataclasses import replace

import numpy as np

from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.job import PodRequest
from gpufleet.policies.filters import for_job, one_pod_host, room_mask
from gpufleet.policies.scorers import best_of, fewest_free, least_allocated, tightest, tightest_else_largest
from gpufleet.testing.builders import fleet, job


def table() -> NodeTable:
    plan = Plan(NodeTable.from_fleet(fleet().leaves(2, nodes=2).build()))
    plan.bind(PodBinding("bg", "w", 0, 0, PodRequest(6)))
    plan.bind(PodBinding("bg", "w", 1, 1, PodRequest(3)))
    return plan.table


def test_the_job_filter_is_a_view_in_which_only_its_nodes_take_pods():
    """A 4-GPU pod fits on n0001 (5 free), n0002 and n0003 (8 free) — on n0001 and n0003 only
    for a job that may use n0000, n0001 and n0003; n0000 (2 free) fits neither way."""
    t = table()
    j = replace(job("j").gpus(4).build(), eligible_nodes=frozenset({t.names[0], t.names[1], t.names[3]}))
    view = for_job(t, j)
    assert room_mask(t, PodRequest(4)).tolist() == [False, True, True, True]
    assert room_mask(view, PodRequest(4)).tolist() == [False, True, False, True]
    assert view.eligible == j.eligible_nodes and view.index is None
    t.take(3, PodRequest(8))  # the view shares the free columns: n0003 is now full for it too
    assert room_mask(view, PodRequest(4)).tolist() == [False, True, False, False]
    assert view.copy().eligible == j.eligible_nodes
    assert for_job(t, job("k").build()) is t  # no filter: the table itself


def test_one_pod_host_ignores_gpus_but_not_cpu_memory_model_or_health():
    """224 CPUs per node: a 200-CPU pod fits every node by CPU (GPU aside); a 300-CPU pod none;
    an unschedulable node never."""
    t = table()
    assert one_pod_host(t, PodRequest(0, cpus=200)).all()
    assert not one_pod_host(t, PodRequest(0, cpus=300)).any()
    t.schedulable[2] = False
    assert one_pod_host(t, PodRequest(0)).tolist() == [True, True, False, True]
    assert not one_pod_host(t, PodRequest(0, gpu_models=("A100-80GB",))).any()


def test_scorers_pick_the_tightest_group_the_fullest_node_and_the_emptiest_share():
    """tightest of capacities (3, 8, 5, 5) for 4: 5, first of the two (index 2); for 9: none.
    fewest_free over free (2, 5, 8, 8): n0000. least_allocated: 2/8, 5/8, 8/8, 8/8 → the
    emptiest, first on ties: n0002."""
    assert tightest(np.array([3, 8, 5, 5]), 4) == 2
    assert tightest(np.array([3, 8, 5, 5]), 9) is None
    t = table()
    assert fewest_free(t, np.ones(4, bool)) == 0
    nodes = np.arange(4)
    assert least_allocated(t, nodes).tolist() == [0.25, 0.625, 1.0, 1.0]
    assert best_of(nodes, least_allocated(t, nodes)) == 2
    assert best_of(np.zeros(0, np.int64), np.zeros(0)) is None


def test_tightest_group_else_largest_first_with_either_remainder_rule():
    """Capacities [3, 6, 4, 5], need 5: group 3 (5) is the tightest that holds it alone. Need 9:
    none does; largest first takes group 1 (6), 3 remain: the tightest that holds 3 is group 0
    (3), while the next largest is group 3 (5). Need 30 > 18: every group, largest first."""
    caps = np.array([3, 6, 4, 5])

    def pairs(*args, **kw):
        groups, amounts = tightest_else_largest(*args, **kw)
        return list(zip(groups.tolist(), amounts.tolist(), strict=True))

    assert pairs(caps, 5) == [(3, 5)]
    assert pairs(caps, 9) == [(1, 6), (0, 3)]
    assert pairs(caps, 9, tight_remainder=False) == [(1, 6), (3, 3)]
    assert pairs(caps, 30) == [(1, 6), (3, 5), (2, 4), (0, 3)]
