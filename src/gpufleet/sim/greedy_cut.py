"""The greedy cycle cut: hand the engine only the jobs that could change what a cycle decides.

Applies where the profile's policies declare it (``CycleReuse.cut``, engine/reuse.py): greedy
gang best-fit in priority-FIFO order (``gang-bestfit``, Tiresias's ``fjf``), every other step inert:
no admission, reservation, backfill or preemption, so a cycle tries every waiting job in order
and binds each whole gang that fits. On a congested queue (thousands waiting, a few GPUs freed)
nearly every job fails, and the engine's per-job cost (order, fit or known failure, status) is
paid for nothing. The cut gives the engine, per shape class ``c`` (``Job.shape_key``), only the
first ``k_c = ⌊F / g_c⌋ + 1`` waiting jobs of the class in order, where ``F`` is the fleet's free
GPUs and ``g_c`` the GPUs one job of the class takes. Why the result is the same:

1. At most ``⌊F / g_c⌋`` jobs of class ``c`` can start in one cycle (each takes ``g_c`` of the
   ``F`` free GPUs, and capacity only shrinks while a cycle places), so among the first
   ``k_c`` jobs of the class at least one fails, if the class has more than ``k_c`` jobs.
2. Feasibility is monotone in free capacity: once a job of class ``c`` failed, every later job
   of the class fails too (the engine's ``FailedShapes`` relies on the same fact), and a failed
   fit binds nothing. So the jobs cut off all fail in the full cycle and change nothing for the
   jobs after them: every placement, and every included job's status, is the same — the failures
   the engine memoises (``FailedShapes``) are each class's first failure, which is included.
3. The full cycle gives every cut-off job of class ``c`` the status of the class's first failing
   job (``FailedShapes`` memoises the verdict per shape key once that job failed). The cut
   returns that status for them, so the decision log writes exactly the lines the full cycle
   would have — and only for jobs whose logged status shape changes (new arrivals, a class
   whose verdict changed), found through ``ShapeQueues.dirty``/``settled``, not by a walk of
   the queue.

Strict FIFO (``gang-fifo``, Tiresias's ``fifo``: the same placer stopping at the first job that
does not fit) is cut along the queue instead: at most ``F`` jobs can start (each takes at least
one GPU), so the pass stops within the first ``F + 1`` jobs in order; the engine gets the first
``F + 2`` (merged from the class heads), and every job after them gets the status the cycle
gives jobs past its stop ("not examined this cycle"), taken from an included job that got it. If
the pass did not stop inside the included jobs (unresolvable jobs do not stop it), the cycle is
rerun uncut.

A strict-FIFO cycle whose only news is arrivals queued behind the job the last cycle stopped at
is answered by the engine without a pass (engine/incremental.py, rule 2, "behind the stop").

Jobs with no whole GPUs (fractional, CPU-only) are never cut (every job of such a class is
included). A cycle with partially placed gangs is not cut. If a cut cycle ever came back with a
class whose included jobs all started (which 1. rules out), it is rerun uncut.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import islice

from gpufleet.engine.phases.order import OrderKey
from gpufleet.engine.reuse import CutMode
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleResult, PendingJob
from gpufleet.model.ids import JobId
from gpufleet.sim.cluster import SimulatedCluster

#: Cut modes: per shape class (greedy), along the queue (strict FIFO).
GREEDY: CutMode = "greedy"
FIFO: CutMode = "fifo"


@dataclass
class Cut:
    """What a cut cycle left out."""

    mode: str
    #: class -> (the class's keys in order, number included)
    classes: dict[tuple, tuple[list[OrderKey], int]]
    #: class -> the status every left-out job of the class gets
    verdicts: dict[tuple, Status] = field(default_factory=dict)


def whole_gpus(cluster: SimulatedCluster, key: tuple, jid: JobId, cache: dict[tuple, int]) -> int:
    """GPUs one job of class ``key`` takes, 0 when it is not whole-GPU only (never cut)."""
    g = cache.get(key)
    if g is None:
        job = cluster.pending[jid]
        whole = all(ps.request.gpus >= 1 and not ps.request.is_fractional for ps in job.pod_sets)
        g = cache[key] = job.total_gpus if whole else 0
    return g


def free_gpus(cluster: SimulatedCluster) -> int:
    table = cluster.table
    return max(int(table.gpu_free[table.schedulable].sum()), 0)


def cut_greedy(cluster: SimulatedCluster, cache: dict[tuple, int]) -> tuple[list[JobId], Cut]:
    free = free_gpus(cluster)
    ids: list[JobId] = []
    cut: dict[tuple, tuple[list[OrderKey], int]] = {}
    for c, lst in cluster.shapes.classes.items():
        g = whole_gpus(cluster, c, lst[0][2], cache)
        k = len(lst) if g <= 0 else min(len(lst), free // g + 1)
        if k < len(lst):
            cut[c] = (lst, k)
        ids += [key[2] for key in lst[:k]]
    return ids, Cut(GREEDY, cut)


def cut_fifo(cluster: SimulatedCluster, cache: dict[tuple, int]) -> tuple[list[JobId], Cut] | None:
    classes = cluster.shapes.classes
    if any(whole_gpus(cluster, c, lst[0][2], cache) <= 0 for c, lst in classes.items()):
        return None
    head = list(islice(heapq.merge(*classes.values()), free_gpus(cluster) + 2))
    taken: dict[tuple, int] = {}
    shape_of = cluster.pending
    for key in head:
        c = shape_of[key[2]].shape_key
        taken[c] = taken.get(c, 0) + 1
    cut = {c: (lst, taken.get(c, 0)) for c, lst in classes.items() if taken.get(c, 0) < len(lst)}
    return [key[2] for key in head], Cut(FIFO, cut)


def verdicts(cut: Cut, result: CycleResult) -> bool:
    """Fill ``cut.verdicts`` from the result; False when a proof's premise failed (rerun uncut)."""
    started = set(result.started)
    statuses = result.statuses
    if cut.mode == FIFO:
        stopped = past = None
        for status in statuses.values():
            if status.code is StatusCode.UNSCHEDULABLE:
                stopped = status
            elif status.code is StatusCode.WAIT:
                past = status
        if stopped is None or past is None:
            return False
        cut.verdicts = dict.fromkeys(cut.classes, past)
        return True
    for c, (lst, k) in cut.classes.items():
        for key in lst[:k]:
            if key[2] not in started:
                cut.verdicts[c] = statuses[key[2]]
                break
        else:
            return False
    return True


def run_cut_cycle(run: Callable[[Sequence[PendingJob]], CycleResult], cluster: SimulatedCluster,
                  mode: CutMode, cache: dict[tuple, int]) -> tuple[CycleResult, Cut | None]:
    """The cycle (``run``: the engine's cycle on a pending input) on the cut input; the cut
    (None when the cycle was run uncut)."""
    cutting = None if cluster.partial else (cut_greedy(cluster, cache) if mode == GREEDY
                                            else cut_fifo(cluster, cache))
    if cutting is None or not cutting[1].classes:
        return run(cluster.pending_view()), None
    ids, cut = cutting
    seq = cluster.shapes.seq
    ids.sort(key=seq.__getitem__)  # the queue's own order, as the full cycle's input has it
    view = cluster.view
    result = run([view(jid) for jid in ids])
    if not verdicts(cut, result):
        return run(cluster.pending_view()), None
    return result, cut
