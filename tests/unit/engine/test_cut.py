"""The cycle cut (engine/cut.py): any driver that keeps a ``PendingQueue`` gets it from
``run_incremental`` alone; the cycle sees the head of each shape class, and the jobs left out get
exactly the status the full cycle gives them."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.engine.cut import cut_cycle
from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.incremental import CycleDelta, CycleMemo, IncrementalMismatch, check, run_incremental
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.queue import PendingQueue
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleInput, LeftOut, PendingJob
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job


def _queue(jobs, bound=None):
    return PendingQueue(PendingJob(j, (bound,) if bound is not None and j.id == "w000" else ())
                        for j in jobs)


def _one_free_node(policy: str, waiting: int = 300, bound=None):
    """Two 8-GPU nodes, one full; ``waiting`` one-GPU jobs queued (w000 first)."""
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    for b in run_cycle(CycleInput(now=0.0, nodes=table, pending=[PendingJob(job("run").gpus(8).build())],
                                  profile=profile("gang-bestfit"))).bindings:
        table.take(b.node, b.request, slot=b.slot)
    jobs = [job(f"w{i:03d}").gpus(1).at(1.0 + i).build() for i in range(waiting)]
    return CycleInput(now=500.0, nodes=table, pending=_queue(jobs, bound), profile=profile(policy))


def _counting():
    seen: list[int] = []

    def run(inp):
        seen.append(len(inp.pending))
        return run_cycle(inp)
    return run, seen


@pytest.mark.parametrize(("policy", "handed"), [("gang-bestfit", 9), ("gang-fifo", 10)])
def test_the_cycle_sees_free_gpus_plus_one_job_of_a_class_and_decides_as_the_full_cycle(policy, handed):
    """F = 8 free GPUs, 300 one-GPU jobs: greedy hands the cycle ⌊8/1⌋ + 1 = 9 jobs, strict FIFO
    F + 2 = 10. The first 8 start, as with the whole queue; each of the 300 − handed jobs left out
    gets the full cycle's own status for it."""
    inp = _one_free_node(policy)
    run, seen = _counting()
    cut = cut_cycle(inp, "greedy" if policy == "gang-bestfit" else "fifo", run)
    full = run_cycle(inp)
    assert seen == [handed]
    assert cut.started == full.started == tuple(f"w{i:03d}" for i in range(8))
    assert cut.bindings == full.bindings
    (left,) = cut.left_out
    assert len(left.ids()) == 300 - handed
    assert all(full.statuses[jid] == left.verdict for jid in left.ids())
    assert all(full.statuses[jid] == s for jid, s in cut.statuses.items())


def test_run_incremental_cuts_where_the_profile_declares_it_and_verify_mode_checks_it():
    """The driver does nothing but call run_incremental with its queue (the live loop does the
    same): the result is cut, and verify mode ran the full cycle beside it without a mismatch."""
    result, _ = run_incremental(CycleMemo(), CycleDelta.unknown(), _one_free_node("gang-bestfit"),
                                verify=True)
    assert result.left_out and len(result.left_out[0].ids()) == 291
    assert result.stats.reused == ""


@pytest.mark.parametrize("policy", ["gang-easy", "topology-aware"])
def test_profiles_that_reserve_or_backfill_are_never_cut(policy):
    """Backfill and reservations look past the first failure of a class: no cut applies."""
    result, _ = run_incremental(CycleMemo(), CycleDelta.unknown(), _one_free_node(policy, 40))
    assert result.left_out == ()
    assert len(result.statuses) == 40 - len(result.started)


def test_a_list_queue_or_a_partial_gang_runs_the_cycle_uncut():
    """Without the queue's per-class order (a plain list) there is nothing to cut by; with a
    partially placed gang (pods bound while waiting) the cut's count of free GPUs does not hold."""
    inp = _one_free_node("gang-bestfit", 40)
    listed = CycleInput(now=inp.now, nodes=inp.nodes, pending=list(inp.pending), profile=inp.profile)
    run, seen = _counting()
    assert cut_cycle(listed, "greedy", run).left_out == () and seen == [40]
    node = int(inp.nodes.gpu_free.argmax())
    bound = PodBinding("w000", "main", 0, node, job("w000").gpus(1).build().pod_sets[0].request)
    partial = _one_free_node("gang-bestfit", 40, bound)
    assert partial.pending.partial
    run, seen = _counting()
    assert cut_cycle(partial, "greedy", run).left_out == () and seen == [40]


def test_verify_mode_catches_a_wrong_verdict_for_the_jobs_left_out():
    inp = _one_free_node("gang-bestfit")
    cut = cut_cycle(inp, "greedy", run_cycle)
    (left,) = cut.left_out
    wrong = LeftOut(left.key, left.keys, left.included, Status(StatusCode.WAIT, ("x",), "p"))
    with pytest.raises(IncrementalMismatch, match="left out"):
        check(type(cut)(cut.bindings, cut.started, cut.statuses, left_out=(wrong,)), run_cycle(inp))


_shapes = st.sampled_from([(1, 1), (2, 1), (4, 1), (8, 1), (8, 2), (3, 1)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy=st.lists(st.integers(0, 8), min_size=4, max_size=4),
       waiting=st.lists(st.tuples(_shapes, st.integers(0, 2), st.integers(0, 50)), min_size=12, max_size=80),
       policy=st.sampled_from(["gang-bestfit", "gang-fifo"]))
def test_a_cut_cycle_decides_what_the_full_cycle_decides(busy, waiting, policy):
    """Any fleet of four 8-GPU nodes with some GPUs taken, any queue of whole-GPU gangs (a few
    shapes, priorities and submit times): verify mode finds no difference between the cut cycle
    and the full one (starts, bindings, every included job's status, every left-out job's)."""
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=4).build())
    for node, gpus in enumerate(busy):
        if gpus:
            table.take(node, job(f"b{node}").gpus(gpus).build().pod_sets[0].request)
    jobs = [job(f"j{i:02d}").gpus(g).gang(n).priority(p).at(float(t)).build()
            for i, ((g, n), p, t) in enumerate(waiting)]
    inp = CycleInput(now=100.0, nodes=table, pending=_queue(jobs), profile=profile(policy))
    result, _ = run_incremental(CycleMemo(), CycleDelta.unknown(), inp, verify=True)
    full = run_cycle(inp)
    assert result.started == full.started
    covered = set(result.statuses) | {jid for left in result.left_out for jid in left.ids()}
    assert covered == set(full.statuses)
