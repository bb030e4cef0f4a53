"""One model of capacity over time: who releases what, when, and what is promised to whom.

Every phase that asks "when could this job start?" reads this model, so they cannot disagree:
reservation (the earliest start of a blocked job), backfill (how much a job that runs past a
reservation's start may take) and the topology placer's wait-or-start rule (how long until a
TP-intact slot opens).

The model, per node n and time t:

    free(n, t) = free_now(n) + Σ_{jobs j ending by t} released_j(n) − Σ_{holds h active at t} held_h(n)

- ``Releases`` — who releases what, when. Running jobs are ranked by expected end (ties by job id;
  the end is ``CycleContext.expected_end``: the planned run time, never in the past, ``evict_at``
  for a job under notice). Their pods' resources are laid out in that order, so "released once
  the first k jobs have ended" is one ``bincount`` over a prefix of the release arrays: O(pods),
  no Python loop over nodes. Built once per cycle and shared by every table it is laid over.
- ``Hold`` — what is promised to whom: a reservation's pods per node from ``start`` to ``end``.
- ``CapacityTimeline`` — a base table (free capacity now, or a view of it) + releases + holds.
  ``free_after(k)`` is the step function's k-th value without holds; ``free_throughout(s, e)``
  the capacity free during the whole window [s, e) with holds taken out, which is what a job
  running over that window may use.

Capacity only grows between hold starts (jobs only end), so the minimum over a window sits at
its start or at a hold's start inside it: ``free_throughout`` evaluates only those points.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import RunningJob
from gpufleet.model.ids import JobId

if TYPE_CHECKING:
    from gpufleet.engine.types import CycleContext

Columns = tuple[np.ndarray, np.ndarray, np.ndarray]


def rank_order(ends: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Indices ranking jobs by (end, id), equal pairs in input order (what a stable
    ``lexsort((id ranks, ends))`` gives) without sorting strings in numpy: a stable sort by end,
    then each run of equal ends (jobs past their estimate all end at now + 1) put in id order by
    Python's stable sort. Runs are few and short; ends are otherwise distinct floats."""
    order = np.argsort(ends, kind="stable")
    e = ends[order]
    tie = np.flatnonzero(e[1:] == e[:-1])
    if tie.size:
        # a run of equal ends over sorted positions a..b-1 shows as ties at a..b-2
        first = np.r_[True, tie[1:] != tie[:-1] + 1]
        last = np.r_[tie[1:] != tie[:-1] + 1, True]
        for a, b in zip(tie[first].tolist(), (tie[last] + 2).tolist(), strict=True):
            order[a:b] = sorted(order[a:b].tolist(), key=ids.__getitem__)
    return order


@dataclass(frozen=True)
class Releases:
    """Running jobs ranked by expected end, and per released pod its job's rank and resources."""

    jobs: tuple[JobId, ...]     # the k-th job to end
    ends: np.ndarray            # expected end of the k-th job to end, ascending
    rel_rank: np.ndarray        # per released pod: rank of its job, ascending
    rel_node: np.ndarray
    rel_gpu: np.ndarray
    rel_cpu: np.ndarray
    rel_mem: np.ndarray

    @classmethod
    def build(cls, running: Sequence[RunningJob], expected_end: Callable[[RunningJob], float],
              ends: np.ndarray | None = None) -> Releases:
        """Rank ``running`` by (expected end, job id) and lay out its pods in that order.

        ``ends``, when given, is ``expected_end`` of every running job already computed as one
        column (``CycleContext.expected_ends``). The jobs' pods are read as columns once, then
        ``ranked`` orders them: a few C-level passes per cycle, not a Python step per job and pod."""
        n = len(running)
        if ends is None:
            ends = np.fromiter(map(expected_end, running), float, n)
        ids = np.empty(n, object)
        ids[:] = list(map(attrgetter("job.id"), running))
        per_job = list(map(attrgetter("bindings"), running))
        counts = np.fromiter(map(len, per_job), np.int64, n)
        binds = list(chain.from_iterable(per_job))
        reqs = list(map(attrgetter("request"), binds))
        m = len(binds)
        pods = (np.fromiter(map(attrgetter("node"), binds), np.int64, m),
                np.fromiter(map(attrgetter("gpus"), reqs), np.int64, m),
                np.fromiter(map(attrgetter("cpus"), reqs), float, m),
                np.fromiter(map(attrgetter("memory_gb"), reqs), float, m))
        return cls.ranked(ends, ids, counts, np.cumsum(counts) - counts, pods)

    @classmethod
    def ranked(cls, ends: np.ndarray, ids: np.ndarray, counts: np.ndarray, first: np.ndarray,
               pods: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> Releases:
        """The one ranking and layout every release schedule is made by (from a list of running
        jobs, ``build``, or from the driver's columns, ``RunningColumns.releases``): job i ends at
        ``ends[i]``, is called ``ids[i]`` (an object array of str) and holds the pods at rows
        ``first[i] .. first[i] + counts[i] - 1`` of ``pods`` (node, GPUs, CPUs, memory). Jobs are
        ranked by (end, id), equal pairs in input order (``rank_order``); their pods are gathered
        in rank order, each job's in binding order."""
        n = int(ends.size)
        if n == 0:
            empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0, float)
            return cls((), empty_f, empty_i, empty_i, empty_i, empty_f, empty_f)
        order = rank_order(ends, ids)
        c = counts[order]
        total = int(c.sum())
        starts_at = np.cumsum(c) - c
        take = np.repeat(first[order] - starts_at, c) + np.arange(total, dtype=np.int64)
        node, gpu, cpu, mem = pods
        return cls(tuple(ids[order].tolist()), ends[order], np.repeat(np.arange(n, dtype=np.int64), c),
                   node[take], gpu[take], cpu[take], mem[take])

    def __len__(self) -> int:
        return int(self.ends.size)

    def released_by(self, k: int, n: int) -> Columns | None:
        """Per node, what the first ``k`` jobs to end give back; None when that is nothing."""
        p = int(np.searchsorted(self.rel_rank, k, side="left"))
        if p == 0:
            return None
        idx = self.rel_node[:p]
        return (np.bincount(idx, self.rel_gpu[:p], n).astype(np.int64),
                np.bincount(idx, self.rel_cpu[:p], n), np.bincount(idx, self.rel_mem[:p], n))


    def released_gpus(self, n: int) -> np.ndarray:
        """GPUs per node (of ``n``) that all these jobs give back when they have ended."""
        back = self.released_by(len(self), n)
        return np.zeros(n, np.int64) if back is None else back[0]

    def last_end_on(self, nodes: Sequence[int]) -> float | None:
        """When the last of these jobs with a pod on ``nodes`` ends; None when none has one."""
        on = np.isin(self.rel_node, np.asarray(nodes, np.int64))
        return float(self.ends[self.rel_rank[on]].max()) if on.any() else None


def release_schedule(ctx: CycleContext, extra: Sequence[RunningJob] = ()) -> Releases:
    """The cycle's release schedule: the running jobs (and ``extra``, this cycle's placements,
    which run from now) ranked by expected end. Read from the driver's running columns when it
    keeps them (engine/running.py: a few numpy passes), else built from the jobs' pods; the same
    schedule either way."""
    cols = ctx.facts.running_columns
    if cols is None:
        running = [*ctx.running, *extra]
        return Releases.build(running, ctx.expected_end, ctx.expected_ends(running))
    return cols.releases(ctx.now, ctx.estimate_accuracy, ctx.expected_end, extra,
                         ctx.expected_ends(extra) if extra else None)


@dataclass
class Hold:
    """Resources per node promised to ``job`` (a reservation) from ``start`` until ``end``."""

    start: float
    end: float
    gpu: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray
    job: JobId | None = None
    _nodes: set[int] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, bindings: Sequence[PodBinding], n: int, start: float, end: float,
           job: JobId | None = None) -> Hold:
        node = np.array([b.node for b in bindings], np.int64)
        return cls(start, end,
                   np.bincount(node, np.array([b.request.gpus for b in bindings], float), n).astype(np.int64),
                   np.bincount(node, np.array([b.request.cpus for b in bindings], float), n),
                   np.bincount(node, np.array([b.request.memory_gb for b in bindings], float), n),
                   job)

    def nodes(self) -> set[int]:
        """The nodes on which this hold takes anything (every other node's entries are zero)."""
        if self._nodes is None:
            self._nodes = set(np.flatnonzero((self.gpu != 0) | (self.cpu != 0) | (self.mem != 0)).tolist())
        return self._nodes

    def overlaps(self, start: float, end: float) -> bool:
        return self.start < end and start < self.end

    def active_at(self, t: float) -> bool:
        return self.start <= t < self.end


@dataclass(frozen=True)
class CapacityTimeline:
    """Free capacity over time on ``table``: releases of running jobs, minus promises (module doc)."""

    table: NodeTable            # free capacity now (after this cycle's placements), or a view
    releases: Releases
    _memo: dict[int, Columns] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(cls, table: NodeTable, running: Sequence[RunningJob],
              expected_end: Callable[[RunningJob], float],
              ends: np.ndarray | None = None) -> CapacityTimeline:
        return cls(table, Releases.build(running, expected_end, ends))

    def over(self, table: NodeTable) -> CapacityTimeline:
        """The same releases laid over another base table (the releases are not rebuilt)."""
        return CapacityTimeline(table, self.releases)

    @property
    def ends(self) -> np.ndarray:
        return self.releases.ends

    def __len__(self) -> int:
        return len(self.releases)

    def start_of(self, k: int, now: float) -> float:
        """The time at which the first ``k`` jobs have ended (``now`` for k = 0)."""
        return now if k == 0 else float(self.releases.ends[k - 1])

    def index_at(self, t: float) -> int:
        """How many jobs have ended by time ``t``."""
        return int(np.searchsorted(self.releases.ends, t, side="right"))

    def _after(self, k: int) -> Columns:
        """``free_after(k)``'s memoised arrays themselves: callers must not change them."""
        hit = self._memo.get(k)
        if hit is None:
            t = self.table
            back = self.releases.released_by(k, len(t))
            hit = ((t.gpu_free.copy(), t.cpu_free.copy(), t.mem_free.copy()) if back is None
                   else (t.gpu_free + back[0], t.cpu_free + back[1], t.mem_free + back[2]))
            self._memo[k] = hit
        return hit

    def free_after(self, k: int) -> Columns:
        """Free capacity once the first ``k`` jobs have ended, holds ignored (arrays owned by the
        caller)."""
        hit = self._after(k)
        return hit[0].copy(), hit[1].copy(), hit[2].copy()

    def free_at(self, t: float, holds: Sequence[Hold] = ()) -> Columns:
        """Free capacity at time ``t``: released by then, minus the holds active at ``t``."""
        gpu, cpu, mem = self.free_after(self.index_at(t))
        for h in holds:
            if h.active_at(t):
                gpu, cpu, mem = gpu - h.gpu, cpu - h.cpu, mem - h.mem
        return gpu, cpu, mem

    def free_throughout(self, holds: Sequence[Hold], start: float, end: float) -> Columns:
        """Per node, the capacity free throughout [start, end), never below zero: the minimum of
        ``free_at`` over ``start`` and the hold starts inside the window."""
        points = [start, *sorted({h.start for h in holds if start < h.start < end})]
        best: Columns | None = None
        for tau in points:
            # ``free_at`` without its copy: every step below makes new arrays, never writes these
            gpu, cpu, mem = self._after(self.index_at(tau))
            for h in holds:
                if h.active_at(tau):
                    gpu, cpu, mem = gpu - h.gpu, cpu - h.cpu, mem - h.mem
            best = (gpu, cpu, mem) if best is None else (
                np.minimum(best[0], gpu), np.minimum(best[1], cpu), np.minimum(best[2], mem))
        assert best is not None
        return np.maximum(best[0], 0), np.maximum(best[1], 0), np.maximum(best[2], 0)

    def free_throughout_on(self, holds: Sequence[Hold], start: float, end: float,
                           nodes: np.ndarray) -> Columns:
        """``free_throughout(holds, start, end)`` read at ``nodes`` (distinct node indices) only:
        column c of the answer equals ``free_throughout(...)[c][nodes]`` element for element,
        because each element goes through the same operations on the same doubles:

        - free now plus what the jobs ended by then release: ``released_by`` sums a node's pods
          with ``bincount``, in pod order from 0.0; so does the ``bincount`` here over the same
          pods (those on ``nodes``, picked out once, in pod order);
        - minus each active hold in ``holds`` order; a hold that takes nothing on ``nodes`` is
          skipped (x − 0 = x, bit for bit);
        - the least over the points, the clamp at zero. A point whose (released pods, active
          holds) equal an earlier point's has the same values: skipped (min(x, x) = x).

        numpy's element-wise arithmetic does not depend on the other elements of an array, so
        a promise's few nodes cost a few short arrays, not the fleet's columns (test:
        tests/unit/engine/test_capacity.py)."""
        points = [start, *sorted({h.start for h in holds if start < h.start < end})]
        t, rel = self.table, self.releases
        k = nodes.size
        where = np.full(len(t), -1, np.int64)
        where[nodes] = np.arange(k)
        loc = where[rel.rel_node]
        sel = np.flatnonzero(loc >= 0)                  # released pods on ``nodes``, in pod order
        loc = loc[sel]
        w = (rel.rel_gpu[sel], rel.rel_cpu[sel], rel.rel_mem[sel])
        free0 = (t.gpu_free[nodes], t.cpu_free[nodes], t.mem_free[nodes])
        wanted = set(nodes.tolist())
        touching = [(i, h) for i, h in enumerate(holds) if not wanted.isdisjoint(h.nodes())]
        taken: dict[int, Columns] = {}
        seen: set[tuple[int, tuple[int, ...]]] = set()
        best: Columns | None = None
        for tau in points:
            p = int(np.searchsorted(rel.rel_rank, self.index_at(tau), side="left"))
            active = tuple(i for i, h in touching if h.active_at(tau))
            if (p, active) in seen:
                continue
            seen.add((p, active))
            if p:
                j = int(np.searchsorted(sel, p, side="left"))
                idx = loc[:j]
                gpu = free0[0] + np.bincount(idx, w[0][:j], k).astype(np.int64)
                cpu = free0[1] + np.bincount(idx, w[1][:j], k)
                mem = free0[2] + np.bincount(idx, w[2][:j], k)
            else:
                gpu, cpu, mem = free0
            for i in active:
                hit = taken.get(i)
                if hit is None:
                    h = holds[i]
                    hit = taken[i] = (h.gpu[nodes], h.cpu[nodes], h.mem[nodes])
                gpu, cpu, mem = gpu - hit[0], cpu - hit[1], mem - hit[2]
            best = (gpu, cpu, mem) if best is None else (
                np.minimum(best[0], gpu), np.minimum(best[1], cpu), np.minimum(best[2], mem))
        assert best is not None
        return np.maximum(best[0], 0), np.maximum(best[1], 0), np.maximum(best[2], 0)

    def limit_for(self, hold: Hold, others: Sequence[Hold]) -> list[np.ndarray]:
        """What a job still running at ``hold.start`` may take there, per node (possibly negative):
        free at that instant minus this hold and every other hold active then. Backfill lowers it
        as it starts jobs that run past ``hold.start``."""
        gpu, cpu, mem = self.free_after(self.index_at(hold.start))
        gpu, cpu, mem = gpu - hold.gpu, cpu - hold.cpu, mem - hold.mem
        for h2 in others:
            if h2 is not hold and h2.overlaps(hold.start, hold.start + 1e-6):
                gpu, cpu, mem = gpu - h2.gpu, cpu - h2.cpu, mem - h2.mem
        return [gpu, cpu, mem]

    def first_end_when(self, ok: Callable[[NodeTable], bool], now: float,
                       horizon_s: float) -> float | None:
        """Seconds from ``now`` until the first job end after which ``ok`` holds on the freed
        capacity (holds ignored), or None when no end within ``horizon_s`` makes it hold.
        Walks the ends in order, adding each job's release to running sums: O(pods + ends x
        the cost of ``ok``), no per-step rebuild."""
        rel = self.releases
        t = self.table
        gpu, cpu, mem = t.gpu_free.copy(), t.cpu_free.copy(), t.mem_free.copy()
        bounds = np.searchsorted(rel.rel_rank, np.arange(len(rel) + 1), side="left")
        for k in range(1, len(rel) + 1):
            at = self.start_of(k, now) - now
            if at > horizon_s:
                return None
            a, b = int(bounds[k - 1]), int(bounds[k])
            nodes = rel.rel_node[a:b]
            np.add.at(gpu, nodes, rel.rel_gpu[a:b])
            np.add.at(cpu, nodes, rel.rel_cpu[a:b])
            np.add.at(mem, nodes, rel.rel_mem[a:b])
            if ok(t.with_free(gpu, cpu, mem)):
                return at
        return None
