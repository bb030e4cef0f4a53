"""The nodes whose free capacity moved since the anchor, and whether jobs fit there as often.

A carried-on EASY cycle (policies/backfill_carry.py) knows each failed
search's verdict as it was made at the *anchor* (a capacity state); on every node whose free
capacity is the anchor's, a job's pods fit as many times now as then. So "is the verdict the same
now?" reduces to the few changed nodes (Δ): does each job's pod set fit there as many times now as
at the anchor, in its mode's view (the protected limits applied) and in mode 0's, by whole request
and by GPUs alone (the two numbers an UNSCHEDULABLE reason names:
``gang_search.insufficiency_reason``).

``fit_counts`` answers that for many requests at once: Σ over the rows of min(slots, replicas),
with ``NodeTable.slots`` itself counting each distinct request's pods per row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import BackfillTrace
from gpufleet.model.job import Job, PodRequest
from gpufleet.policies.backfill_limits import limited_view

#: (request, replicas) of a job with one whole-GPU pod set and no node filter.
Plain = tuple[PodRequest, int]


def plain(job: Job) -> Plain | None:
    """The job's one pod set when its fit counts are the whole story of its verdict, else None."""
    if len(job.pod_sets) != 1 or job.eligible_nodes is not None:
        return None
    ps = job.pod_sets[0]
    req = ps.request
    if req.is_fractional or req.gpus <= 0:
        return None
    return req, ps.replicas


def fit_counts(table: NodeTable, reqs: Sequence[Plain], parts: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Per (request, replicas) and per block of rows (the table's rows cut in ``parts`` equal
    blocks): Σ over the block of min(pods of the request a row takes, replicas), by the whole
    request and by GPUs alone; two arrays of shape (requests, parts). The pods a row takes are
    ``NodeTable.slots``' count, the engine's one rule, asked once per distinct request; the
    sums are one array operation over all requests."""
    row_of: dict[tuple, int] = {}  # (GPUs, CPUs, memory, models): all a plain request's slots read
    asks: list[PodRequest] = []
    whole_row: list[int] = []
    gpus_row: list[int] = []
    for q, _ in reqs:
        for rows, key in ((whole_row, (q.gpus, q.cpus, q.memory_gb, q.gpu_models)),
                          (gpus_row, (q.gpus, 0.0, 0.0, q.gpu_models))):
            i = row_of.get(key)
            if i is None:
                i = row_of[key] = len(asks)
                asks.append(PodRequest(*key))
            rows.append(i)
    slots = np.stack([table.slots(ask) for ask in asks])
    reps = np.array([r for _, r in reqs], np.int64)[:, None]

    def summed(rows: list[int]) -> np.ndarray:
        return np.minimum(slots[rows], reps).reshape(len(reqs), parts, -1).sum(axis=2)

    return summed(whole_row), summed(gpus_row)


class Delta:
    """The rows whose free capacity differs from the trace's anchor, with the anchor's capacity
    and now's in the view of each mode."""

    def __init__(self, trace: BackfillTrace, table: NodeTable) -> None:
        g0, c0, m0 = trace.view0
        idx = np.flatnonzero((g0 != table.gpu_free) | (c0 != table.cpu_free) | (m0 != table.mem_free))
        self.idx, self.trace, self.table = idx, trace, table
        self.now = table.rows(idx) if idx.size else None
        self.views: dict[int, NodeTable] = {}

    def __bool__(self) -> bool:
        return self.idx.size > 0

    def same(self, jobs: Sequence[tuple[Job, int]]) -> list[bool]:
        """Per (job, mode): do its pods fit as many times on these rows now as at the anchor, in
        the mode's view and in mode 0's, by whole request and by GPUs alone? False for a job whose
        verdict is not made of those counts alone (several pod sets, a node filter, fractions)."""
        out = [self.now is None] * len(jobs)
        if self.now is None:
            return out
        by_mode: dict[int, list[tuple[int, Plain]]] = {}
        for i, (job, mode) in enumerate(jobs):
            p = plain(job)
            if p is not None:
                out[i] = True
                for m in {mode, 0}:
                    by_mode.setdefault(m, []).append((i, p))
        for mode, items in by_mode.items():
            whole, by_gpus = fit_counts(self._both(mode), [p for _, p in items], parts=2)
            equal = (whole[:, 0] == whole[:, 1]) & (by_gpus[:, 0] == by_gpus[:, 1])
            for (i, _), eq in zip(items, equal.tolist(), strict=True):
                out[i] = out[i] and eq
        return out

    def _both(self, mode: int) -> NodeTable:
        """The rows twice, in ``mode``'s view: first with the anchor's capacity, then with now's."""
        if mode not in self.views:
            idx, trace, now = self.idx, self.trace, self.now
            assert now is not None
            g0, c0, m0 = trace.view0
            before = limited_view(now.with_free(g0[idx], c0[idx], m0[idx]),
                                  [[a[idx] for a in lim] for lim in trace.limits_initial], mode)
            after = limited_view(now, [[a[idx] for a in lim] for lim in trace.limits], mode)
            twice = self.table.rows(np.concatenate([idx, idx]))
            self.views[mode] = twice.with_free(np.concatenate([before.gpu_free, after.gpu_free]),
                                               np.concatenate([before.cpu_free, after.cpu_free]),
                                               np.concatenate([before.mem_free, after.mem_free]))
        return self.views[mode]

