"""Slurm's ``bf_resolution`` in the Slurm-like backfill plan.

Slurm 22.05 backfill.c, for each job it plans: ``start_time = (start_time / backfill_resolution)
* backfill_resolution`` and likewise ``end_reserve`` — the job's hold on its nodes in the backfill
map is rounded *down* to the resolution, while ``job_ptr->start_time``, the start squeue and
scontrol report, stays exact (the captured queue shows jobs 16 and 17 planned at 13:33:18, not on a
60-s boundary, with ``bf_resolution=60``: tests/data/slurm/scontrol-jobs.txt). A candidate is
refused when a map record that begins no later than its end holds its nodes.

Scenario (two 8-GPU nodes, now = 0): job ``run`` holds node 0 until t = 90; ``big`` needs both
nodes, so it is planned at t = 90; ``small`` needs one node for 80 s and would end at t = 80.
* exact plan: 80 ≤ 90, ``small`` starts now on node 1 without delaying ``big``;
* bf_resolution = 60: ``big``'s hold begins at floor(90 / 60) · 60 = 60 < 80, so Slurm refuses
  ``small`` now; ``big``'s estimated start is still reported as 90.
"""

import pytest

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob, RunningJob
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.slurm_like import SlurmObservedPriority, slurm_like_profile
from gpufleet.testing.builders import fleet


def _job(jid: str, nodes: int, run: float, priority: int) -> Job:
    return Job(id=JobId(jid), tenant=TenantId("t"), pod_sets=(PodSet("main", nodes, PodRequest(gpus=8)),),
               submit_time=0.0, run_time=run, priority=priority)


def _cycle(resolution_s: float, epoch_s: float = 0.0):
    table = NodeTable.from_fleet(fleet().leaves(1, nodes=2).build())
    running = _job("run", 1, 100.0, 0)
    table.take(0, PodRequest(gpus=8))
    profile = slurm_like_profile(None, orderer=SlurmObservedPriority(), resolution_s=resolution_s,
                                 epoch_s=epoch_s)
    inp = CycleInput(now=0.0, nodes=table, profile=profile,
                     pending=[PendingJob(_job("big", 2, 600.0, 2)), PendingJob(_job("small", 1, 80.0, 1))],
                     running=[RunningJob(running, -10.0, (PodBinding(running.id, "main", 0, 0,
                                                                        PodRequest(gpus=8)),))])
    return run_cycle(inp)


def test_without_a_resolution_the_short_job_backfills_ahead_of_the_planned_one() -> None:
    result = _cycle(0.0)
    assert result.started == (JobId("small"),)


def test_with_bf_resolution_60_the_planned_hold_starts_at_60_and_the_short_job_waits() -> None:
    result = _cycle(60.0)
    assert result.started == ()
    big = result.statuses[JobId("big")]
    assert big.estimated_start == pytest.approx(90.0)  # reported exact, as Slurm reports it


def test_the_grid_is_in_epoch_seconds_so_the_origin_moves_it() -> None:
    """Sim time 0 at epoch 30: grid lines at sim −30, 30, 90, 150: ``big``'s start 90 is on a line
    and its hold begins at 90 > 80, so ``small`` starts now. At epoch 50 (lines at 10, 70, 130) the
    hold begins at floor((90 + 50) / 60) · 60 − 50 = 70 < 80: ``small`` waits."""
    assert _cycle(60.0, epoch_s=30.0).started == (JobId("small"),)
    assert _cycle(60.0, epoch_s=50.0).started == ()
