"""The capacity timeline's window read on a few nodes (``CapacityTimeline.free_throughout_on``)
and the promise check built on it (``policies.backfill.bindings_fit_throughout``) answer exactly
what the whole-fleet computation answers: the same floats at those nodes, the same boolean.

Timelines are random: free capacity now (possibly already over-committed by holds), running jobs
releasing pods at random ends, holds (reservations) over random windows that may promise more than
is free, so the window capacity goes negative and the clamp at zero matters; pods that ask for no
GPUs or no CPUs, where that clamp decides the answer; unschedulable nodes; CPU and memory values
that are not exact binary fractions (thirds, tenths), so any change in the order of the
subtractions would show in the last bit.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.engine.capacity import CapacityTimeline, Hold, Releases
from gpufleet.engine.fit import bindings_fit
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import RunningJob
from gpufleet.model.job import PodRequest
from gpufleet.policies.backfill import bindings_fit_throughout, window_free
from gpufleet.testing.builders import fleet, job

N = 6
# not exact binary fractions: a reordered subtraction would differ in the last bit
cpu_values = st.sampled_from([0.0, 0.1, 0.3, 1 / 3, 2.5, 7.0, 10 / 3, 28.7, 224.0])
mem_values = st.sampled_from([0.0, 0.2, 10 / 3, 64.1, 100.0, 2048.0])
times = st.floats(0, 1_000)


def _table(gpu: list[int], cpu: list[float], mem: list[float], sched: list[bool]) -> NodeTable:
    t = NodeTable.from_fleet(fleet().leaves(1, nodes=N).build())
    t = t.with_free(np.array(gpu, np.int64), np.array(cpu, float), np.array(mem, float))
    t.schedulable = np.array(sched, bool)
    return t


def _running(i: int, end: float, pods: list[tuple[int, int, float, float]]) -> tuple[RunningJob, float]:
    jid = f"r{i}"
    return RunningJob(job(jid).runs(end).build(), 0.0,
                      tuple(PodBinding(jid, "w", k, node, PodRequest(g, c, m))
                            for k, (node, g, c, m) in enumerate(pods))), end


pods = st.lists(st.tuples(st.integers(0, N - 1), st.integers(0, 4), cpu_values, mem_values),
                min_size=1, max_size=4)
timelines = st.builds(
    lambda gpu, cpu, mem, sched, run: (_table(gpu, cpu, mem, sched), run),
    st.lists(st.integers(-2, 8), min_size=N, max_size=N),
    st.lists(cpu_values, min_size=N, max_size=N),
    st.lists(mem_values, min_size=N, max_size=N),
    st.lists(st.booleans(), min_size=N, max_size=N),
    st.lists(st.builds(_running, st.integers(0, 99), times, pods), max_size=6))


def _hold(start: float, length: float, gpu: list[int], cpu: list[float], mem: list[float]) -> Hold:
    return Hold(start, start + length, np.array(gpu, np.int64), np.array(cpu, float), np.array(mem, float))


holds = st.lists(st.builds(_hold, times, st.floats(1, 800),
                           st.lists(st.integers(0, 8), min_size=N, max_size=N),
                           st.lists(cpu_values, min_size=N, max_size=N),
                           st.lists(mem_values, min_size=N, max_size=N)), max_size=5)


def _avail(timeline: tuple[NodeTable, list[tuple[RunningJob, float]]]) -> CapacityTimeline:
    table, run = timeline
    run = list({rj.job.id: (rj, end) for rj, end in run}.values())
    ends = {rj.job.id: end for rj, end in run}
    return CapacityTimeline(table, Releases.build([rj for rj, _ in run], lambda rj: ends[rj.job.id]))


@settings(max_examples=300, deadline=None)
@given(timelines, holds, times, st.floats(1, 900),
       st.lists(st.integers(0, N - 1), max_size=N))
def test_the_window_read_on_some_nodes_equals_the_whole_fleets_window_at_those_nodes(
        timeline, hs, start, length, nodes):
    avail = _avail(timeline)
    idx = np.array(list(dict.fromkeys(nodes)), np.int64)  # distinct nodes, in any order
    whole = avail.free_throughout(hs, start, start + length)
    some = avail.free_throughout_on(hs, start, start + length, idx)
    for w, s in zip(whole, some, strict=True):
        assert s.dtype == w.dtype
        assert s.tolist() == w[idx].tolist()


@settings(max_examples=300, deadline=None)
@given(timelines, holds, times, st.floats(1, 900))
def test_the_window_is_the_least_free_capacity_at_its_start_and_each_hold_start_inside_it(
        timeline, hs, start, length):
    """Reference, from the definition: ``free_at`` (released by then, minus the holds active
    then, as three columns) at ``start`` and at every hold start inside [start, start + length),
    the element-wise minimum, then clamped at zero. Same dtypes, same numbers."""
    avail = _avail(timeline)
    end = start + length
    points = [start, *(h.start for h in hs if start < h.start < end)]
    at = [avail.free_at(tau, hs) for tau in points]
    reference = [np.maximum(np.minimum.reduce([cols[c] for cols in at]), 0) for c in range(3)]
    got = avail.free_throughout(hs, start, end)
    for r, g in zip(reference, got, strict=True):
        assert g.dtype == r.dtype
        assert g.tolist() == r.tolist()


@settings(max_examples=500, deadline=None)
@given(timelines, holds, times, st.floats(1, 900),
       st.lists(st.tuples(st.integers(0, N - 1), st.integers(0, 3), cpu_values, mem_values), max_size=5))
def test_a_promise_fits_on_its_own_nodes_exactly_when_it_fits_on_the_whole_window_table(
        timeline, hs, start, length, pods):
    """Reference: ``bindings_fit`` on the whole fleet's window table, as the reserve step built it
    for every standing promise before."""
    avail = _avail(timeline)
    bindings = tuple(PodBinding("p", "w", k, node, PodRequest(g, c, m))
                     for k, (node, g, c, m) in enumerate(pods))
    end = start + length
    reference = bindings_fit(avail.table.with_free(*window_free(avail, hs, start, end)), bindings)
    assert bindings_fit_throughout(avail, hs, start, end, bindings) is reference


def test_a_hold_that_over_promises_a_node_leaves_zero_not_a_debt_for_a_cpu_only_pod():
    """One node, 2 GPUs and 4 CPUs free; a hold takes 3 GPUs and 4 CPUs over [0, 100): the window
    has 2 − 3 = −1 GPUs, clamped to 0, and 0 CPUs. A pod asking for 0 GPUs and 0 CPUs fits
    (0 ≥ 0); one asking for 1 GPU does not (0 < 1). Without the clamp the first would not fit."""
    t = NodeTable.from_fleet(fleet().leaves(1, nodes=1).build())
    t = t.with_free(np.array([2]), np.array([4.0]), np.array([100.0]))
    avail = CapacityTimeline(t, Releases.build([], lambda rj: 0.0))
    hold = Hold(0.0, 100.0, np.array([3]), np.array([4.0]), np.array([0.0]))
    zero = (PodBinding("p", "w", 0, 0, PodRequest(0, 0.0, 1.0)),)
    one = (PodBinding("p", "w", 0, 0, PodRequest(1, 0.0, 1.0)),)
    assert bindings_fit_throughout(avail, [hold], 10.0, 50.0, zero)
    assert not bindings_fit_throughout(avail, [hold], 10.0, 50.0, one)
