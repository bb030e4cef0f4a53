"""``NodeTable.slots`` (engine/snapshot.py): pods of a whole-GPU request a node takes now =
min(floor(free GPUs / asked), trunc(free CPUs / asked + 1e-9), trunc(free memory / asked + 1e-9)),
zero on unschedulable nodes. The reference computes that node by node in Python; the vector code
takes shortcuts (a shift for a power-of-two GPU count, one scratch array) that must not change a
single count, including on nodes whose free counts went negative."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.engine.snapshot import UNBOUNDED, NodeTable
from gpufleet.model.job import PodRequest
from gpufleet.testing.builders import fleet


def _reference(table: NodeTable, req: PodRequest, empty: bool) -> list[int]:
    gpu, cpu, mem = ((table.gpu_total, table.cpu_total, table.mem_total) if empty
                     else (table.gpu_free, table.cpu_free, table.mem_free))
    out = []
    for i in range(len(table)):
        s = int(gpu[i]) // req.gpus if req.gpus > 0 else int(UNBOUNDED)
        if req.cpus > 0:
            s = min(s, math.trunc(float(cpu[i]) * (1.0 / req.cpus) + 1e-9))
        if req.memory_gb > 0:
            s = min(s, math.trunc(float(mem[i]) * (1.0 / req.memory_gb) + 1e-9))
        out.append(s if table.schedulable[i] else 0)
    return out


@settings(max_examples=200, deadline=None)
@given(free=st.lists(st.tuples(st.integers(-2, 8), st.floats(-4.0, 256.0), st.floats(0.0, 2048.0),
                               st.booleans()), min_size=6, max_size=6),
       gpus=st.integers(0, 8), cpus=st.sampled_from([0.0, 3.0, 7.5, 16.0]),
       mem=st.sampled_from([0.0, 100.0, 7.7, 256.0]), empty=st.booleans())
def test_slots_are_the_per_node_minimum_over_dimensions(
        free: list[tuple[int, float, float, bool]], gpus: int, cpus: float, mem: float, empty: bool) -> None:
    table = NodeTable.from_fleet(fleet().leaves(2, nodes=3).build())
    for i, (g, c, m, ok) in enumerate(free):
        table.gpu_free[i], table.cpu_free[i], table.mem_free[i], table.schedulable[i] = g, c, m, ok
    req = PodRequest(gpus, cpus, mem)
    got = table.slots(req, empty=empty)
    assert got.dtype == np.int64
    assert got.tolist() == _reference(table, req, empty)


def test_an_eight_gpu_node_takes_two_four_gpu_pods_unless_its_cpus_run_out() -> None:
    """8 free GPUs / 4 = 2 pods; with 40 free CPUs and 32 asked per pod, trunc(40 / 32) = 1; a
    3-GPU request (not a power of two) takes floor(8 / 3) = 2."""
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    table.cpu_free[1] = 40.0
    assert table.slots(PodRequest(4, 32.0)).tolist() == [2, 1]
    assert table.slots(PodRequest(3)).tolist() == [2, 2]
