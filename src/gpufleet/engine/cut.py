"""The cycle cut: run the cycle on only the waiting jobs that could change what it decides.

Applies where the profile's policies declare it (``CycleReuse.cut``, engine/reuse.py): whole-gang
placement whose fit depends on the shape class and free capacity alone, monotone in it, in
priority-FIFO order, every other step inert; and where the driver keeps a ``PendingQueue`` (its
per-class order, engine/shape_classes.py) with no partially placed gang. On a congested queue
nearly every job fails, and the cycle's per-job cost (order, fit or known failure, status) is paid
for nothing.

*Greedy* (``gang-bestfit``, Tiresias's ``fjf``): per shape class ``c`` the cycle gets the first
``k_c = ⌊F / g_c⌋ + 1`` waiting jobs, ``F`` the free GPUs on schedulable nodes, ``g_c`` the GPUs
one job of the class takes. Exact because:

1. At most ``⌊F / g_c⌋`` jobs of class ``c`` can start in one cycle (capacity only shrinks while
   a cycle places), so among the first ``k_c`` of a longer class at least one fails.
2. Feasibility is monotone in free capacity: after a job of class ``c`` failed, every later one
   fails (the place walk's class kill rests on the same fact) and binds nothing. So the jobs left
   out change nothing for the jobs after them: every placement and included status is the same.
3. The full cycle gives every left-out job its class's first failure's status (the place
   walk gives it to every job of a failed class); the result says so per class (``CycleResult.left_out``).

*Strict FIFO* (``gang-fifo``, Tiresias's ``fifo``): at most ``F`` jobs can start (each takes a
GPU), so the pass stops within the first ``F + 1`` in order; the cycle gets the first ``F + 2``
(merged from the class heads), and every job after them the status the cycle gives jobs past its
stop ("not examined this cycle"), taken from an included job that got it.

Checked, not assumed: if a class's included jobs all started (1. rules it out), or a strict-FIFO
pass did not stop inside the included jobs (unresolvable jobs do not stop it), the cycle runs
uncut. A class with no whole GPU (fractional, CPU-only) is never cut (strict FIFO not at all).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import replace
from itertools import islice

from gpufleet.engine.queue import PendingQueue
from gpufleet.engine.reuse import CutMode
from gpufleet.engine.shape_classes import OrderKey
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import StatusCode
from gpufleet.engine.types import CycleInput, CycleResult, LeftOut
from gpufleet.model.ids import JobId

#: Per class cut: (the class's keys in order, how many the cycle got).
_Classes = dict[tuple, tuple[list[OrderKey], int]]


def cut_cycle(inp: CycleInput, mode: CutMode, run: Callable[[CycleInput], CycleResult]) -> CycleResult:
    """The cycle (``run``) on the cut input, its result carrying the left-out classes' verdicts;
    on the whole input when nothing can be cut or a premise failed."""
    queue = inp.pending
    if not isinstance(queue, PendingQueue) or queue.partial:
        return run(inp)
    cutting = _greedy(queue, inp.nodes) if mode == "greedy" else _fifo(queue, inp.nodes)
    if cutting is None or not cutting[1]:
        return run(inp)
    ids, classes = cutting
    ids.sort(key=queue.positions.__getitem__)  # the queue's own order: the full cycle's input
    get = queue.get
    result = run(replace(inp, pending=[pj for pj in map(get, ids) if pj is not None]))
    left = _verdicts(mode, classes, result)
    if left is None:
        return run(inp)
    return replace(result, left_out=left)


def _free_gpus(table: NodeTable) -> int:
    return max(int(table.gpu_free[table.schedulable].sum()), 0)


def _greedy(queue: PendingQueue, table: NodeTable) -> tuple[list[JobId], _Classes]:
    free = _free_gpus(table)
    ids: list[JobId] = []
    cut: _Classes = {}
    shapes = queue.shapes
    for c, lst in shapes.classes.items():
        g = shapes.gpus[c]
        k = len(lst) if g <= 0 else min(len(lst), free // g + 1)
        if k < len(lst):
            cut[c] = (lst, k)
        ids += [key[2] for key in lst[:k]]
    return ids, cut


def _fifo(queue: PendingQueue, table: NodeTable) -> tuple[list[JobId], _Classes] | None:
    shapes = queue.shapes
    classes, gpus = shapes.classes, shapes.gpus
    if any(gpus[c] <= 0 for c in classes):
        return None
    head = list(islice(heapq.merge(*classes.values()), _free_gpus(table) + 2))
    taken: dict[tuple, int] = {}
    for key in head:
        pj = queue.get(key[2])
        assert pj is not None
        c = pj.job.shape_key
        taken[c] = taken.get(c, 0) + 1
    cut = {c: (lst, taken.get(c, 0)) for c, lst in classes.items() if taken.get(c, 0) < len(lst)}
    return [key[2] for key in head], cut


def _verdicts(mode: CutMode, classes: _Classes, result: CycleResult) -> tuple[LeftOut, ...] | None:
    """Each cut class's verdict from the result; None when a proof's premise failed (run uncut)."""
    statuses = result.statuses
    if mode == "fifo":
        stopped = past = None
        for status in statuses.values():
            if status.code is StatusCode.UNSCHEDULABLE:
                stopped = status
            elif status.code is StatusCode.WAIT:
                past = status
        if stopped is None or past is None:
            return None
        return tuple(LeftOut(c, lst, k, past) for c, (lst, k) in classes.items())
    started = set(result.started)
    out = []
    for c, (lst, k) in classes.items():
        first = next((key[2] for key in lst[:k] if key[2] not in started), None)
        if first is None:
            return None
        out.append(LeftOut(c, lst, k, statuses[first]))
    return tuple(out)
