"""The incremental cycle (engine/incremental.py): told what changed, it answers from its memo only
where a rule proves the full cycle decides the same, and verify mode holds it to that."""

from __future__ import annotations

import pytest

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.incremental import (
    BEHIND_STOP,
    UNFIT_ARRIVALS,
    CycleDelta,
    CycleMemo,
    IncrementalMismatch,
    check,
    run_incremental,
)
from gpufleet.engine.queue import PendingQueue
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleInput, CycleResult, PendingJob
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job


def _input(table, jobs, policy):
    return CycleInput(now=0.0, nodes=table, pending=PendingQueue(PendingJob(j) for j in jobs),
                      profile=profile(policy))


def _busy_table(nodes: int, busy: int):
    """``nodes`` nodes of 8 GPUs, the first ``busy`` of them full (bound by a first cycle)."""
    f = fleet().leaves(1, nodes=nodes).build()
    table = NodeTable.from_fleet(f)
    filler = [job(f"run{i}").gpus(8).build() for i in range(busy)]
    first = run_cycle(_input(table, filler, "gang-bestfit"))
    assert len(first.started) == busy
    for b in first.bindings:
        table.take(b.node, b.request, slot=b.slot)
    return table


def test_without_news_the_memo_is_not_trusted_and_the_full_cycle_runs():
    """An unknown delta always runs the cycle: the same decisions as run_cycle itself."""
    table = _busy_table(2, 0)
    inp = _input(table, [job("a").gpus(8).build(), job("b").gpus(8).gang(3).build()], "gang-bestfit")
    result, memo = run_incremental(CycleMemo(), CycleDelta.unknown(), inp)
    full = run_cycle(inp)
    assert (result.started, result.bindings, result.statuses) == (full.started, full.bindings, full.statuses)
    assert result.stats.reused == ""
    assert memo.profile is inp.profile


def test_greedy_arrivals_too_big_for_the_free_capacity_are_answered_without_a_pass():
    """Two nodes, one full: 8 GPUs free. A 16-GPU gang that arrives cannot fit (the index proves
    it), so nothing starts and it waits UNSCHEDULABLE; verify mode agrees with the full cycle."""
    table = _busy_table(2, 1)
    big = job("big").gpus(8).gang(2).build()
    inp = _input(table, [big], "gang-bestfit")
    result, _ = run_incremental(CycleMemo(), CycleDelta(arrived=(big,)), inp, verify=True)
    assert result.stats.reused == UNFIT_ARRIVALS
    assert result.started == () and result.bindings == ()
    assert result.statuses["big"].code is StatusCode.UNSCHEDULABLE
    assert run_cycle(inp).statuses["big"].code is StatusCode.UNSCHEDULABLE


def test_an_arrival_that_fits_runs_the_full_cycle_and_starts():
    table = _busy_table(2, 1)
    small = job("small").gpus(8).build()
    inp = _input(table, [small], "gang-bestfit")
    result, _ = run_incremental(CycleMemo(), CycleDelta(arrived=(small,)), inp)
    assert result.stats.reused == "" and result.started == ("small",)


@pytest.mark.parametrize("delta", [CycleDelta(arrived=(), ended=()), CycleDelta(nodes=(0,)),
                                   CycleDelta(other=True)], ids=["no arrivals", "a node changed",
                                                                 "something else changed"])
def test_only_arrivals_alone_are_ever_reused(delta):
    table = _busy_table(2, 1)
    big = job("big").gpus(8).gang(2).build()
    result, _ = run_incremental(CycleMemo(), delta, _input(table, [big], "gang-bestfit"))
    assert result.stats.reused == ""


def test_strict_fifo_arrivals_behind_the_stop_get_the_status_past_the_stop():
    """gang-fifo on 2 nodes, one full: ``head`` (16 GPUs) stops the pass; ``late`` (8 GPUs, which
    would fit) arrives behind it. The memo knows the stop: no pass, ``late`` waits unexamined,
    exactly the status the full cycle gives it (verify mode compares it whole)."""
    table = _busy_table(2, 1)
    head = job("head").gpus(8).gang(2).at(1.0).build()
    first, memo = run_incremental(CycleMemo(), CycleDelta.unknown(), _input(table, [head], "gang-fifo"))
    assert first.statuses["head"].code is StatusCode.UNSCHEDULABLE
    late = job("late").gpus(8).at(2.0).build()
    inp = CycleInput(now=2.0, nodes=table, pending=PendingQueue(PendingJob(j) for j in (head, late)),
                     profile=memo.profile)
    result, _ = run_incremental(memo, CycleDelta(arrived=(late,)), inp, verify=True)
    assert result.stats.reused == BEHIND_STOP
    assert result.started == ()
    assert result.statuses["late"] == run_cycle(inp).statuses["late"]


def test_a_strict_fifo_arrival_ahead_of_the_stop_runs_the_full_cycle():
    """A priority-5 job sorts ahead of the stopped head: the pass changes, so it runs (and
    starts the new job)."""
    table = _busy_table(2, 1)
    head = job("head").gpus(8).gang(2).at(1.0).build()
    _, memo = run_incremental(CycleMemo(), CycleDelta.unknown(), _input(table, [head], "gang-fifo"))
    urgent = job("urgent").gpus(8).priority(5).at(2.0).build()
    inp = CycleInput(now=2.0, nodes=table, pending=PendingQueue(PendingJob(j) for j in (head, urgent)),
                     profile=memo.profile)
    result, _ = run_incremental(memo, CycleDelta(arrived=(urgent,)), inp)
    assert result.stats.reused == "" and result.started == ("urgent",)


def test_a_memo_made_under_another_profile_is_not_used():
    """gang-fifo's stop means nothing to gang-easy (which declares neither rule)."""
    table = _busy_table(2, 1)
    head = job("head").gpus(8).gang(2).at(1.0).build()
    _, memo = run_incremental(CycleMemo(), CycleDelta.unknown(), _input(table, [head], "gang-fifo"))
    late = job("late").gpus(8).gang(2).at(2.0).build()
    inp = CycleInput(now=2.0, nodes=table, pending=PendingQueue(PendingJob(j) for j in (head, late)),
                     profile=profile("gang-easy"))
    assert run_incremental(memo, CycleDelta(arrived=(late,)), inp)[0].stats.reused == ""


def test_verify_mode_catches_an_answer_that_differs_from_the_full_cycle():
    """The checker itself can fail: a reused answer claiming a job waits that the full cycle starts."""
    table = _busy_table(2, 1)
    small = job("small").gpus(8).build()
    inp = _input(table, [small], "gang-bestfit")
    full = run_cycle(inp)
    wrong = type(full)(bindings=(), started=(), statuses={"small": Status(StatusCode.UNSCHEDULABLE)})
    with pytest.raises(IncrementalMismatch):
        check(wrong, full)


def test_verify_holds_a_carried_cycle_to_every_waiting_jobs_verdict_shape():
    """A carried-on cycle (``earlier`` and ``shape`` given) judged nobody. The full cycle gives
    job a WAIT with other numbers than a's earlier WAIT: the same shape, accepted. a's earlier
    verdict UNSCHEDULABLE: a changed shape, refused. Job b judged by the full cycle only (no
    earlier verdict, none carried): refused."""
    carried = CycleResult(bindings=(), started=(), statuses={})
    full = CycleResult(bindings=(), started=(), statuses={"a": Status(StatusCode.WAIT, ("in 5 s",), "p")})
    code = lambda s: s.code  # noqa: E731
    check(carried, full, earlier={"a": Status(StatusCode.WAIT, ("in 9 s",), "p")}, shape=code)
    with pytest.raises(IncrementalMismatch, match="carried"):
        check(carried, full, earlier={"a": Status(StatusCode.UNSCHEDULABLE, ("x",), "p")}, shape=code)
    with pytest.raises(IncrementalMismatch, match="judged by the full cycle only"):
        check(carried, full, earlier={}, shape=code)
