"""Every placer honours the one placement contract (engine/phases/place.py): ``place``, ``fit`` and
``feasible``, with ``feasible`` never contradicting ``fit``."""

from dataclasses import replace

import numpy as np
import pytest

from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status
from gpufleet.engine.types import CycleContext
from gpufleet.model.job import PodRequest
from gpufleet.policies.registry import PROFILES, profile
from gpufleet.policies.slurm_like import OneTaskPerNode, SlurmPriority, slurm_like_profile
from gpufleet.testing.builders import fleet, job

SHAPES = [(1, 1), (2, 4), (8, 1), (8, 2), (8, 3), (4, 5), (8, 9)]


#: Slurm's one task per node, with our node choice and with select/cons_tres's (the chooser of
#: the same gang search).
SLURM = {
    "slurm-like-easy": lambda: slurm_like_profile(SlurmPriority(nodes=4, cpus=224), "easy"),
    "slurm-like-easy-cons-tres": lambda: slurm_like_profile(SlurmPriority(nodes=4, cpus=224), "easy",
                                                            slurm_nodes=True),
}


def partly_used_table() -> NodeTable:
    """Two leaves of 2 nodes × 8 GPUs; node 0 has 2 GPUs free, node 1 has 5, nodes 2-3 are empty."""
    plan = Plan(NodeTable.from_fleet(fleet().leaves(2, nodes=2).build()))
    plan.bind(PodBinding("bg", "w", 0, 0, PodRequest(6)))
    plan.bind(PodBinding("bg", "w", 1, 1, PodRequest(3)))
    return plan.table


@pytest.mark.parametrize("name", [*PROFILES, *SLURM])
@pytest.mark.parametrize(("gpus", "pods"), SHAPES)
def test_feasible_never_contradicts_fit(name, gpus, pods):
    prof = SLURM[name]() if name in SLURM else profile(name)
    placer = prof.placer
    table = partly_used_table()
    j = job("j").gpus(gpus).gang(pods).build()
    ctx = CycleContext(now=0.0, profile=prof, rng=np.random.default_rng(0))
    answer = placer.feasible(j, table, ctx)
    fitted = placer.fit(j, table, CycleContext(now=0.0, profile=prof, rng=np.random.default_rng(0)))
    if answer is not None:
        assert answer is (not isinstance(fitted, Status)), (answer, fitted)
    if not isinstance(fitted, Status):
        assert len(fitted) == pods and all(b.request.gpus == gpus for b in fitted)


def test_one_task_per_node_gives_every_pod_a_node_of_its_own():
    """One 8-GPU node holds two 1-GPU pods for gang best fit, but Slurm's one task per node needs
    two nodes: on a one-node fleet the 2-task job cannot fit, on a two-node fleet each node gets one."""
    one = NodeTable.from_fleet(fleet().leaves(1, nodes=1).build())
    two = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    j = job("j").gpus(1).gang(2).build()
    prof = profile("gang-bestfit")
    ctx = CycleContext(now=0.0, profile=prof, rng=np.random.default_rng(0))
    assert not isinstance(prof.placer.fit(j, one, ctx), Status)
    placer = OneTaskPerNode()
    assert placer.feasible(j, one, ctx) is False and isinstance(placer.fit(j, one, ctx), Status)
    fitted = placer.fit(j, two, CycleContext(now=0.0, profile=prof, rng=np.random.default_rng(0)))
    assert not isinstance(fitted, Status) and sorted(b.node for b in fitted) == [0, 1]
    assert int(one.slots(PodRequest(1))[0]) == 8, "the capped view must not change the table it reads"


@pytest.mark.parametrize("name", [*PROFILES, *SLURM])
@pytest.mark.parametrize(("gpus", "pods"), [(1, 1), (2, 4), (8, 1), (8, 2), (4, 3)])
@pytest.mark.parametrize("eligible", [(0,), (0, 1), (1, 3), (2, 3)])
def test_every_placer_fits_a_job_only_on_its_eligible_nodes(name, gpus, pods, eligible):
    """On the partly used table (free GPUs per node: 2, 5, 8, 8), a job that may use only the
    nodes in ``eligible`` is placed there or not at all, and ``feasible`` agrees with ``fit``:
    e.g. 2 pods × 8 GPUs on nodes (1, 3) need two nodes with 8 free, but node 1 has 5, so no fit,
    while on (2, 3) each node takes one pod."""
    prof = SLURM[name]() if name in SLURM else profile(name)
    table = partly_used_table()
    names = frozenset(table.names[i] for i in eligible)
    j = replace(job("j").gpus(gpus).gang(pods).build(), eligible_nodes=names)
    answer = prof.placer.feasible(j, table, CycleContext(now=0.0, profile=prof, rng=np.random.default_rng(0)))
    fitted = prof.placer.fit(j, table, CycleContext(now=0.0, profile=prof, rng=np.random.default_rng(0)))
    free = {0: 2, 1: 5, 2: 8, 3: 8}
    per_node_cap = 1 if name in SLURM else None
    room = sum(min(free[n] // gpus, per_node_cap or pods) for n in eligible)
    assert isinstance(fitted, Status) is (room < pods), (fitted, room)
    if not isinstance(fitted, Status):
        assert {b.node for b in fitted} <= set(eligible) and len(fitted) == pods, fitted
    if answer is not None:
        assert answer is (not isinstance(fitted, Status))
