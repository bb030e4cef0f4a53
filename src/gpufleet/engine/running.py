"""The running set as columns kept by a driver across cycles, and the release schedule read from them.

Reservation asks every cycle "who releases what, when" (engine/capacity.py ``Releases``). Built
from the running jobs' objects, that is one Python step per running job and per bound pod, every
cycle: with ~2,000 running jobs on 2,000 nodes it was ~60% of a congested EASY cycle in the large
simulation (bench/README.md, "simulate: the running set as columns"). But what a running job
releases, and its planned end before ``now`` and the tenants' accuracy records are applied, change
only when it starts, ends or is given notice. So a driver keeps them in ``RunningColumns``:

- ``add`` / ``remove``: O(pods) Python per job, once per start / end (a row per job, a row per pod,
  in capacity-doubling arrays; removal marks the row dead; dead rows are compacted away once they
  outnumber the live ones);
- ``releases(...)``: the release schedule for one cycle from the columns, in a few numpy passes:
  the same ``expected_end`` arithmetic as ``CycleContext.expected_ends`` (element for element, so
  the same floats), the same (end, id) rank, and the pods in the same order as
  ``Releases.build`` lays them out (equality is a property test: tests/unit/engine/test_running.py).

The engine stays pure: it only reads the columns (``CycleInput.running_columns``); the driver that
hands them promises they describe exactly ``CycleInput.running``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from gpufleet.engine.capacity import Releases
from gpufleet.engine.types import RunningJob
from gpufleet.model.ids import JobId

_MIN_CAP = 64
#: Below this many rows the columns are never compacted.
_COMPACT_MIN = 256


def _same_multipliers(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Are two per-tenant accuracy multiplier columns the same numbers (None: no accuracy, all 1)?"""
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and bool(np.array_equal(a, b))


def _estimate(rj: RunningJob) -> float:
    """``job_estimates`` for one job: the estimate where one is given (not NaN), else the run time."""
    est = rj.job.run_time_estimate
    return rj.job.run_time if est is None or est != est else float(est)


class RunningColumns:
    """One row per running job (start, estimate, progress, tenant, notice) and one row per bound
    pod (job row, node, GPUs, CPUs, memory), appended at start, marked dead at end."""

    __slots__ = ("n", "row_of", "rjs", "live", "start", "est", "progress", "tenant",
                 "evicting", "tenants", "_tenant_of", "npods", "m", "pod_row", "pod_node",
                 "pod_gpu", "pod_cpu", "pod_mem", "n_live", "_ids_obj", "compact_min", "version",
                 "_cached")

    def __init__(self, compact_min: int = _COMPACT_MIN) -> None:
        #: Below this many rows the columns are never compacted.
        self.compact_min = compact_min
        self.n = 0                      # rows used (live and dead)
        self.n_live = 0
        self.row_of: dict[JobId, int] = {}
        self.rjs: list[RunningJob | None] = []
        self.live = np.zeros(_MIN_CAP, bool)
        self.start = np.zeros(_MIN_CAP, np.float64)
        self.est = np.zeros(_MIN_CAP, np.float64)
        self.progress = np.zeros(_MIN_CAP, np.float64)
        self.tenant = np.zeros(_MIN_CAP, np.int64)
        self.evicting = np.zeros(_MIN_CAP, bool)
        self.npods = np.zeros(_MIN_CAP, np.int64)
        self.tenants: list[str] = []
        self._tenant_of: dict[str, int] = {}
        self.m = 0                      # pod rows used
        self.pod_row = np.zeros(_MIN_CAP, np.int64)
        self.pod_node = np.zeros(_MIN_CAP, np.int64)
        self.pod_gpu = np.zeros(_MIN_CAP, np.int64)
        self.pod_cpu = np.zeros(_MIN_CAP, np.float64)
        self.pod_mem = np.zeros(_MIN_CAP, np.float64)
        self._ids_obj = np.full(_MIN_CAP, None, object)
        #: Bumped by every ``add`` and ``remove`` (compaction happens inside ``remove``).
        self.version = 0
        #: The last schedule ``releases`` built without ``extra``, and what it was built from:
        #: (version, per-tenant multipliers, the smallest planned end, schedule).
        self._cached: tuple[int, np.ndarray | None, float, Releases] | None = None

    @classmethod
    def of(cls, running: Sequence[RunningJob]) -> RunningColumns:
        cols = cls()
        for rj in running:
            cols.add(rj)
        return cols

    def __len__(self) -> int:
        return self.n_live

    def __contains__(self, jid: object) -> bool:
        return jid in self.row_of

    def get(self, jid: JobId) -> RunningJob | None:
        row = self.row_of.get(jid)
        return None if row is None else self.rjs[row]

    # --- driver side -------------------------------------------------------------------------

    def add(self, rj: RunningJob) -> None:
        """A job starts running (or its run changes: ``remove`` it first)."""
        jid = rj.job.id
        if jid in self.row_of:
            raise KeyError(f"job {jid} is already in the running columns")
        self._grow_rows(self.n + 1)
        self._grow_pods(self.m + len(rj.bindings))
        r = self.n
        t = self._tenant_of.get(rj.job.tenant)
        if t is None:
            t = self._tenant_of[rj.job.tenant] = len(self.tenants)
            self.tenants.append(rj.job.tenant)
        self.live[r] = True
        self.start[r] = rj.start_time
        self.est[r] = _estimate(rj)
        self.progress[r] = rj.progress_before
        self.tenant[r] = t
        self.evicting[r] = rj.evicting
        self.npods[r] = len(rj.bindings)
        self._ids_obj[r] = jid
        self.rjs.append(rj)
        self.row_of[jid] = r
        m = self.m
        for b in rj.bindings:
            self.pod_row[m] = r
            self.pod_node[m] = b.node
            self.pod_gpu[m] = b.request.gpus
            self.pod_cpu[m] = b.request.cpus
            self.pod_mem[m] = b.request.memory_gb
            m += 1
        self.m = m
        self.n = r + 1
        self.n_live += 1
        self.version += 1

    def remove(self, jid: JobId) -> RunningJob:
        """A job stops running (ends, is evicted, or its run is about to be replaced)."""
        r = self.row_of.pop(jid)
        rj = self.rjs[r]
        assert rj is not None
        self.live[r] = False
        self.rjs[r] = None
        self.n_live -= 1
        self.version += 1
        if self.n >= self.compact_min and self.n_live * 2 < self.n:
            self._compact()
        return rj

    def _grow_rows(self, need: int) -> None:
        cap = self.live.size
        if need <= cap:
            return
        new = max(need, 2 * cap)
        for name in ("live", "start", "est", "progress", "tenant", "evicting", "npods", "_ids_obj"):
            old = getattr(self, name)
            arr = np.zeros(new, old.dtype) if old.dtype != object else np.full(new, None, object)
            arr[:cap] = old
            setattr(self, name, arr)

    def _grow_pods(self, need: int) -> None:
        cap = self.pod_row.size
        if need <= cap:
            return
        new = max(need, 2 * cap)
        for name in ("pod_row", "pod_node", "pod_gpu", "pod_cpu", "pod_mem"):
            old = getattr(self, name)
            arr = np.zeros(new, old.dtype)
            arr[:cap] = old
            setattr(self, name, arr)

    def _compact(self) -> None:
        """Drop dead rows, keeping the live ones (and their pods) in order."""
        keep = np.flatnonzero(self.live[:self.n])
        new_of = np.full(self.n, -1, np.int64)
        new_of[keep] = np.arange(keep.size)
        pods = np.flatnonzero(self.live[self.pod_row[:self.m]])
        for name in ("live", "start", "est", "progress", "tenant", "evicting", "npods", "_ids_obj"):
            arr = getattr(self, name)
            arr[:keep.size] = arr[keep]
            arr[keep.size:] = None if arr.dtype == object else 0
        for name in ("pod_node", "pod_gpu", "pod_cpu", "pod_mem"):
            arr = getattr(self, name)
            arr[:pods.size] = arr[pods]
        self.pod_row[:pods.size] = new_of[self.pod_row[pods]]
        rows = keep.tolist()
        self.rjs = [self.rjs[i] for i in rows]
        self.row_of = {jid: i for i, jid in enumerate(self._ids_obj[:keep.size].tolist())}
        self.n = keep.size
        self.m = pods.size

    # --- engine side (read only) -------------------------------------------------------------

    def running(self) -> list[RunningJob]:
        """The running jobs, in the order they were added."""
        return [rj for rj in self.rjs if rj is not None]

    def earliest_planned_end(self, accuracy: Mapping[str, float]) -> float:
        """The earliest planned end (start + max(planned run − progress, 0), the arithmetic of
        ``releases``) of any running job, before the "not in the past" rule; inf when none runs.
        While it lies after ``now``, no release time depends on ``now``."""
        live = np.flatnonzero(self.live[:self.n])
        if live.size == 0:
            return float("inf")
        est = self.est[live]
        if accuracy:
            mult = np.fromiter((max(1.0, accuracy.get(t, 1.0)) for t in self.tenants), float,
                               len(self.tenants))
            est = est * mult[self.tenant[live]]
        return float((self.start[live] + np.maximum(est - self.progress[live], 0.0)).min())

    def any_evicting(self) -> bool:
        return bool(self.evicting[:self.n][self.live[:self.n]].any())

    def releases(self, now: float, accuracy: Mapping[str, float],
                 expected_end: Callable[[RunningJob], float],
                 extra: Sequence[RunningJob] = (),
                 extra_ends: np.ndarray | None = None) -> Releases:
        """``Releases.build(running + extra, expected_end, expected_ends(running + extra))`` from the
        columns: the rows' ends by the same arithmetic as ``CycleContext.expected_ends`` (jobs
        under notice one by one, by ``expected_end``), ``extra`` (this cycle's placements, not yet
        running) by ``extra_ends``; ranked by (end, id), ties in input order; pods laid out in
        rank order, each job's in binding order.

        A call without ``extra`` returns the previous call's schedule object when that call had
        no ``extra`` either, no ``add``/``remove`` came in between (``version``), the per-tenant
        multipliers are the same numbers, no live job is under notice, and ``now`` is below every
        live job's planned end (and was at the previous call). Proof that it equals a fresh
        build: the rows and multipliers are the same, so ``planned`` is the same array; every
        planned end is after both ``now`` values, so ``ends = planned`` in both calls (the
        ``now + 1`` branch is taken by no row, and no row reads ``expected_end``); the ranking,
        the ids and the pod layout are functions of (ends, ids, counts, pods) alone. A cycle in
        which only jobs arrived reuses the schedule. Callers must not write into it (none does:
        ``CapacityTimeline`` builds new arrays from it)."""
        mult = np.fromiter((max(1.0, accuracy.get(t, 1.0)) for t in self.tenants), float,
                           len(self.tenants)) if accuracy else None
        hit = self._cached
        if (hit is not None and not extra and hit[0] == self.version and now < hit[2]
                and _same_multipliers(hit[1], mult)):
            return hit[3]  # the same schedule: see ``_cached`` below
        live = np.flatnonzero(self.live[:self.n])
        k = live.size
        est = self.est[live]
        if mult is not None:
            est = est * mult[self.tenant[live]]
        planned = self.start[live] + np.maximum(est - self.progress[live], 0.0)
        ends = np.where(planned > now, planned, now + 1.0)
        evicting = bool(self.evicting[live].any())
        if evicting:
            for i in np.flatnonzero(self.evicting[live]).tolist():
                rj = self.rjs[int(live[i])]
                assert rj is not None
                ends[i] = expected_end(rj)
        ids = self._ids_obj[live]
        counts = self.npods[live]
        if extra:
            x_ids = np.empty(len(extra), object)
            x_ids[:] = [rj.job.id for rj in extra]
            x_ends = extra_ends if extra_ends is not None else np.fromiter(
                map(expected_end, extra), float, len(extra))
            ends = np.concatenate([ends, x_ends])
            ids = np.concatenate([ids, x_ids])
            counts = np.concatenate([counts, np.fromiter((len(rj.bindings) for rj in extra), np.int64,
                                                         len(extra))])
        first = np.searchsorted(self.pod_row[:self.m], live)  # each live row's first pod row
        if extra:
            binds = [b for rj in extra for b in rj.bindings]
            xm = len(binds)
            # extra pods go after the stored ones, in the same row-by-row layout
            first = np.concatenate([first, self.m + np.cumsum(counts[k:]) - counts[k:]])
            p_node = np.concatenate([self.pod_node[:self.m],
                                     np.fromiter((b.node for b in binds), np.int64, xm)])
            p_gpu = np.concatenate([self.pod_gpu[:self.m],
                                    np.fromiter((b.request.gpus for b in binds), np.int64, xm)])
            p_cpu = np.concatenate([self.pod_cpu[:self.m],
                                    np.fromiter((b.request.cpus for b in binds), float, xm)])
            p_mem = np.concatenate([self.pod_mem[:self.m],
                                    np.fromiter((b.request.memory_gb for b in binds), float, xm)])
        else:
            p_node, p_gpu, p_cpu, p_mem = (self.pod_node[:self.m], self.pod_gpu[:self.m],
                                           self.pod_cpu[:self.m], self.pod_mem[:self.m])
        out = Releases.ranked(ends, ids, counts, first, (p_node, p_gpu, p_cpu, p_mem))
        lowest = float(planned.min()) if k else math.inf
        # Kept for the next call when it is a function of (rows, multipliers) alone: no
        # ``extra``, no job under notice (its end reads ``now``), and every planned end after
        # ``now`` (then ``ends`` is ``planned`` itself, not now + 1).
        self._cached = (None if extra or evicting or not now < lowest
                        else (self.version, mult, lowest, out))
        return out
