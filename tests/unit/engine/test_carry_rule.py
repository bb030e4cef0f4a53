"""Rule 4 of the incremental cycle (engine/incremental.py, policies/backfill_carry.py) asked
directly, as any driver asks it: an EASY cycle whose only news is an arrival behind every waiting
job is carried on from the last scan, and any news the delta cannot vouch for runs the cycle."""

from __future__ import annotations

import pytest

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.incremental import CARRIED, CycleDelta, CycleMemo, run_incremental
from gpufleet.engine.queue import PendingQueue
from gpufleet.engine.running import RunningColumns
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job


def _first_cycle():
    """8 × 8 GPUs; "a" runs on 7 nodes until t=36,000; w0..w7 (16 GPUs each) wait: EASY's depth
    of eight reservations, w0's protected at 36,000."""
    table = NodeTable.from_fleet(fleet().leaves(2, nodes=4).build())
    a = job("a").gpus(8).gang(7).runs(36_000).build()
    easy = profile("gang-easy")
    placed = run_cycle(CycleInput(now=0.0, nodes=table, pending=[PendingJob(a)], profile=easy))
    for b in placed.bindings:
        table.take(b.node, b.request, slot=b.slot)
    running = [RunningJob(a, 0.0, placed.bindings)]
    queue = PendingQueue(PendingJob(job(f"w{i}").gpus(8).gang(2).at(1.0).runs(3600).build())
                         for i in range(8))
    inp = CycleInput(now=1.0, nodes=table, pending=queue, profile=easy, running=running,
                     seed=1, running_columns=RunningColumns.of(running))
    first, memo = run_incremental(CycleMemo(), CycleDelta.unknown(), inp, verify=True)
    assert len(first.reservations) == 8 and first.stats.reused == ""
    late = job("x-late").gpus(8).gang(2).at(5.0).runs(3600).build()
    queue.add(PendingJob(late))
    later = CycleInput(now=5.0, nodes=table, pending=queue, profile=inp.profile, running=running, seed=2,
                       reservations=first.reservations, running_columns=inp.running_columns)
    return first, memo, later, late


def test_an_arrival_behind_the_queue_is_carried_on_and_decides_as_the_full_cycle():
    """x-late (16 GPUs) cannot use the 8 free GPUs: nothing starts, the eight reservations stand,
    and x-late gets the full cycle's own status (verify mode ran that cycle beside it)."""
    first, memo, later, late = _first_cycle()
    result, _ = run_incremental(memo, CycleDelta(arrived=(late,)), later, verify=True)
    full = run_cycle(later)
    assert result.stats.reused == CARRIED
    assert result.started == full.started == ()
    assert result.reservations == full.reservations == first.reservations
    assert result.statuses["x-late"] == full.statuses["x-late"]


@pytest.mark.parametrize("delta", [CycleDelta(arrived=(), other=True), CycleDelta(nodes=(3,)),
                                   CycleDelta(gap=True)],
                         ids=["something else changed", "a node changed",
                              "a change at an instant with no cycle"])
def test_news_the_delta_cannot_vouch_for_runs_the_full_cycle(delta):
    _, memo, later, late = _first_cycle()
    delta = CycleDelta(arrived=(late,), other=delta.other, nodes=delta.nodes, gap=delta.gap)
    result, memo = run_incremental(memo, delta, later, verify=True)
    assert result.stats.reused == ""
    assert memo.scan is not None  # the full cycle's scan is the next one carried on
