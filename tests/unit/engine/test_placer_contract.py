"""Every placer honours the one placement contract (engine/phases/place.py): ``place``, ``fit`` and
``feasible``, with ``feasible`` never contradicting ``fit``."""

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


def partly_used_table() -> NodeTable:
    """Two leaves of 2 nodes × 8 GPUs; node 0 has 2 GPUs free, node 1 has 5, nodes 2-3 are empty."""
    plan = Plan(NodeTable.from_fleet(fleet().leaves(2, nodes=2).build()))
    plan.bind(PodBinding("bg", "w", 0, 0, PodRequest(6)))
    plan.bind(PodBinding("bg", "w", 1, 1, PodRequest(3)))
    return plan.table


@pytest.mark.parametrize("name", [*PROFILES, "slurm-like-easy"])
@pytest.mark.parametrize(("gpus", "pods"), SHAPES)
def test_feasible_never_contradicts_fit(name, gpus, pods):
    prof = (slurm_like_profile(SlurmPriority(nodes=4, cpus=224), "easy") if name == "slurm-like-easy"
            else profile(name))
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
