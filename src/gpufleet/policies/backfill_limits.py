"""The backfill scan's view of capacity under protected reservations, and its verdicts.

A backfill candidate of mode k (it runs past the first k protected reservation starts) sees the
free capacity capped by those reservations' per-node limits; a start takes its pods off them. Kept
apart from policies/backfill.py so that carrying a scan on (policies/backfill_continue.py,
policies/backfill_carry.py) reads the same arithmetic without importing the scan itself.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, Reservation
from gpufleet.model.job import Job


def feasible(ctx: CycleContext, job: Job, table: NodeTable) -> bool:
    """Yes/no without building a placement where the placer's cheap test can tell."""
    answer = ctx.profile.placer.feasible(job, table, ctx)
    return not isinstance(ctx.profile.placer.fit(job, table, ctx), Status) if answer is None else answer


def limited_view(table: NodeTable, limits: Sequence[Sequence[np.ndarray]], mode: int) -> NodeTable:
    """What a backfill candidate of ``mode`` sees: the free capacity capped, per node, by the
    first ``mode`` protected reservations' limits (never below zero); the table itself in mode 0."""
    if mode == 0:
        return table
    gpu, cpu, mem = table.gpu_free, table.cpu_free, table.mem_free
    for lim in limits[:mode]:
        gpu, cpu, mem = np.minimum(gpu, lim[0]), np.minimum(cpu, lim[1]), np.minimum(mem, lim[2])
    return table.with_free(np.maximum(gpu, 0), np.maximum(cpu, 0), np.maximum(mem, 0))


def take_from_limits(limits: Sequence[Sequence[np.ndarray]], mode: int,
                     bindings: Sequence[PodBinding], sign: int = -1) -> None:
    """A started candidate of ``mode`` runs past the first ``mode`` protected starts: its pods
    come off those reservations' per-node limits (``sign=+1``: a job that ended early gives
    back what it would have held past them)."""
    for lim in limits[:mode]:
        for b in bindings:
            lim[0][b.node] += sign * b.request.gpus
            lim[1][b.node] += sign * b.request.cpus
            lim[2][b.node] += sign * b.request.memory_gb


def delay_status(end: float, first: Reservation, policy: str) -> Status:
    """A candidate that fits now but, running until ``end``, would take what the first protected
    reservation needs at its start."""
    return Status(StatusCode.WAIT, (
        f"fits now, but running until ~t={end:.0f}s it would delay "
        f"the reservation for {first.job} at t={first.start:.0f}s",), policy)


#: Backfill's verdict for a candidate the scan never reached (``max_tests`` searches were made).
UNEXAMINED = Status(StatusCode.WAIT, ("not examined this cycle: the backfill scan limit "
                                      "was reached before this job's turn",), "backfill")
