"""What a preempted job keeps and loses: the checkpoint arithmetic.

One copy, used by the preemption policies to rank victims and by the simulator to charge them,
so a victim is ranked on exactly the cost it is charged.

A job with checkpoint interval I has saved ⌊P / I⌋ × I seconds of its progress P (P counts work
done, from before earlier preemptions too, up to the eviction). On notice, a job whose grace
period is at least its checkpoint cost C writes a fresh checkpoint of its progress at the notice
and keeps all of it. A job without checkpointing keeps
nothing. Work lost = P − saved; every restart also costs R seconds of start-up on all its GPUs.
Lost GPU-seconds = GPUs × (P − saved + R).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpufleet.engine.types import RunningJob


@dataclass(frozen=True, slots=True)
class EvictionCost:
    progress_s: float
    saved_s: float
    restart_s: float
    gpus: int

    @property
    def lost_s(self) -> float:
        return self.progress_s - self.saved_s

    @property
    def lost_gpu_s(self) -> float:
        return self.gpus * (self.lost_s + self.restart_s)


def restart_s(rj: RunningJob) -> float:
    """Start-up time this run pays before useful work: the restart cost, for a resumed job."""
    return rj.job.checkpointing.restart_s if (rj.job.checkpointing and rj.resumed) else 0.0


def progress_at(rj: RunningJob, now: float) -> float:
    """Seconds of useful work done by ``now``: restart time first, then work."""
    return rj.progress_before + max(0.0, now - rj.start_time - restart_s(rj))


def eviction_cost(rj: RunningJob, notice_time: float, grace_s: float) -> EvictionCost:
    """Cost of evicting ``rj`` at ``notice_time + grace_s`` after a notice at ``notice_time``.

    A job whose checkpoint cost fits in the grace period spends it writing a checkpoint of its
    progress at the notice, then exits: nothing is lost but the restart. Otherwise it computes on
    until the eviction and keeps its last periodic checkpoint before it (and at least what it
    resumed from).
    """
    ck = rj.job.checkpointing
    p = min(progress_at(rj, notice_time + grace_s), rj.job.run_time)
    if ck is None:
        saved = 0.0
    elif grace_s > 0 and ck.cost_s <= grace_s:
        p = saved = min(progress_at(rj, notice_time), rj.job.run_time)
    else:
        periodic = math.floor(p / ck.interval_s) * ck.interval_s if ck.interval_s > 0 else 0.0
        saved = max(periodic, min(rj.progress_before, p))
    restart = ck.restart_s if ck else 0.0
    return EvictionCost(p, saved, restart, rj.job.total_gpus)


def remaining_run_s(rj: RunningJob) -> float:
    """Wall time from (re)start to finish: restart cost (after a preemption) plus the work left."""
    return restart_s(rj) + rj.job.run_time - rj.progress_before
