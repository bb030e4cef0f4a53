"""The pending queue as columns kept across cycles, and read-only views of it.

A cycle over a 100,000-job queue used to start by reading every job's priority, submit time,
estimate and shape class into arrays and sorting them (0.1–0.3 s of Python per cycle, whatever
the cycle then did). Those columns change only when a job arrives or leaves, so a driver that keeps
its queue in a ``PendingQueue`` pays for each job once, on arrival, and a cycle reads arrays:

- ``add`` / ``remove``: O(1) Python per job (a dict entry and one element per column);
- ``priority_order()``: the (−priority, submit time, id) order, kept sorted across cycles: new jobs
  are merged in by binary search (O(log n) key comparisons each, one ``np.insert`` per batch),
  leavers dropped with one mask (O(n) in C, no Python step per job);
- ``QueueView``: a snapshot of some of the jobs in some order (an index array into the columns),
  what the phases pass each other instead of Python lists. It stays valid after the driver changes
  the queue (storage is only appended to, or replaced by a compacted copy, never edited in place),
  so statuses resolved lazily after the cycle still read the jobs the cycle saw.

A plain list of ``PendingJob`` still works everywhere (``QueueView.of`` reads its columns once, as
the cycle did before); a ``PendingQueue`` makes the same decisions, in the same order, faster.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import overload

import numpy as np

from gpufleet.engine.shape_classes import ShapeClasses
from gpufleet.engine.types import PendingJob
from gpufleet.model.ids import JobId
from gpufleet.model.shape_key import ShapeKey

#: Rows converted to Python ints at a time while iterating a view.
_CHUNK = 512
#: Below this many live slots a queue is never compacted (compaction copies every column).
_COMPACT_MIN = 4096


class _Store:
    """Append-only columns of a set of pending jobs. Rows are never edited or dropped in place:
    a compaction builds a new store, so a view keeps reading the rows it was made over."""

    __slots__ = ("jobs", "prio", "submit", "est", "cls", "tenant", "n", "classes", "_class_of",
                 "tenants", "_tenant_of", "row_of")

    def __init__(self, classes: list[ShapeKey] | None = None, tenants: list[str] | None = None) -> None:
        self.jobs: list[PendingJob] = []
        #: Each job id's latest row (a view holds at most one row per id).
        self.row_of: dict[JobId, int] = {}
        self.n = 0
        self.prio = np.empty(0, np.int64)
        self.submit = np.empty(0, np.float64)
        self.est = np.empty(0, np.float64)
        self.cls = np.empty(0, np.int64)
        self.tenant = np.empty(0, np.int64)
        #: Shape classes (``Job.shape_key``) numbered by first appearance; tenants likewise.
        self.classes: list[ShapeKey] = list(classes or [])
        self._class_of = {k: i for i, k in enumerate(self.classes)}
        self.tenants: list[str] = list(tenants or [])
        self._tenant_of = {t: i for i, t in enumerate(self.tenants)}

    def _grow(self, need: int) -> None:
        cap = max(need, 2 * self.prio.size, 64)
        for name in ("prio", "submit", "est", "cls", "tenant"):
            old = getattr(self, name)
            new = np.empty(cap, old.dtype)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)

    def append(self, pj: PendingJob) -> int:
        i = self.n
        if i >= self.prio.size:
            self._grow(i + 1)
        job = pj.job
        self.jobs.append(pj)
        self.row_of[job.id] = i
        self.prio[i] = job.priority
        self.submit[i] = job.submit_time
        self.est[i] = job.estimate
        key = job.shape_key
        c = self._class_of.get(key)
        if c is None:
            c = self._class_of[key] = len(self.classes)
            self.classes.append(key)
        self.cls[i] = c
        t = self._tenant_of.get(job.tenant)
        if t is None:
            t = self._tenant_of[job.tenant] = len(self.tenants)
            self.tenants.append(job.tenant)
        self.tenant[i] = t
        self.n = i + 1
        return i

    def extend(self, pjs: list[PendingJob]) -> range:
        """``append`` of each of ``pjs`` in turn, each column written in one numpy step (a fork
        of the live world queues 100,000 jobs at once); the rows they got."""
        i, k = self.n, len(pjs)
        if i + k > self.prio.size:
            self._grow(i + k)
        jobs = [pj.job for pj in pjs]
        self.jobs.extend(pjs)
        cls, tenant = [], []
        for r, job in enumerate(jobs, i):
            self.row_of[job.id] = r
            key = job.shape_key
            c = self._class_of.get(key)
            if c is None:
                c = self._class_of[key] = len(self.classes)
                self.classes.append(key)
            cls.append(c)
            t = self._tenant_of.get(job.tenant)
            if t is None:
                t = self._tenant_of[job.tenant] = len(self.tenants)
                self.tenants.append(job.tenant)
            tenant.append(t)
        self.prio[i:i + k] = [job.priority for job in jobs]
        self.submit[i:i + k] = [job.submit_time for job in jobs]
        self.est[i:i + k] = [job.estimate for job in jobs]
        self.cls[i:i + k] = cls
        self.tenant[i:i + k] = tenant
        self.n = i + k
        return range(i, i + k)

    def subset(self, rows: np.ndarray) -> _Store:
        """A new store holding only ``rows``, in order (this one is left unchanged)."""
        new = _Store(self.classes, self.tenants)
        new.jobs = [self.jobs[r] for r in rows.tolist()]
        new.row_of = {pj.job.id: i for i, pj in enumerate(new.jobs)}
        new.n = len(new.jobs)
        for name in ("prio", "submit", "est", "cls", "tenant"):
            setattr(new, name, getattr(self, name)[rows])
        return new

    def sort_key(self, i: int) -> tuple[int, float, str, int]:
        """Row ``i``'s place in priority-FIFO order; the row number breaks ties (input order)."""
        return (-int(self.prio[i]), float(self.submit[i]), self.jobs[i].job.id, i)


class QueueView(Sequence[PendingJob]):
    """Some pending jobs in some order: rows ``idx`` of a store. Indexing, slicing and iteration
    give ``PendingJob``s as a list would; the columns give arrays aligned with the view."""

    __slots__ = ("_store", "idx")

    def __init__(self, store: _Store, idx: np.ndarray) -> None:
        self._store = store
        self.idx = idx

    @classmethod
    def of(cls, jobs: Sequence[PendingJob]) -> QueueView:
        """A view of any sequence: itself if it is one, else its jobs read into new columns."""
        if isinstance(jobs, QueueView):
            return jobs
        if isinstance(jobs, PendingQueue):
            return jobs.view()
        store = _Store()
        for pj in jobs:
            store.append(pj)
        return cls(store, np.arange(store.n, dtype=np.int64))

    def __len__(self) -> int:
        return int(self.idx.size)

    @overload
    def __getitem__(self, i: int) -> PendingJob: ...

    @overload
    def __getitem__(self, i: slice) -> QueueView: ...

    def __getitem__(self, i: int | slice) -> PendingJob | QueueView:
        if isinstance(i, slice):
            return QueueView(self._store, self.idx[i])
        return self._store.jobs[int(self.idx[i])]

    def __iter__(self) -> Iterator[PendingJob]:
        jobs, idx = self._store.jobs, self.idx
        for lo in range(0, idx.size, _CHUNK):  # a loop that stops early converts little
            yield from map(jobs.__getitem__, idx[lo: lo + _CHUNK].tolist())

    def take(self, positions: np.ndarray) -> QueueView:
        """The jobs at these positions of this view, in that order."""
        return QueueView(self._store, self.idx[positions])

    # ---- columns, aligned with the view ------------------------------------------------------

    @property
    def classes(self) -> list[ShapeKey]:
        """Every shape class the store has seen; ``cls`` indexes it."""
        return self._store.classes

    @property
    def cls(self) -> np.ndarray:
        return self._store.cls[self.idx]

    @property
    def est(self) -> np.ndarray:
        """``Job.estimate`` per job."""
        return self._store.est[self.idx]

    def planned(self, accuracy: Mapping[str, float] | None) -> np.ndarray:
        """``CycleContext.planned_run`` per job: the estimate × max(1, the tenant's accuracy)
        (the same float product, done by numpy)."""
        est = self.est
        if not accuracy:
            return est
        store = self._store
        factor = np.fromiter((max(1.0, accuracy.get(t, 1.0)) for t in store.tenants), float,
                             len(store.tenants))
        return est * factor[store.tenant[self.idx]]

    def positions_of(self, ids: Iterable[JobId]) -> np.ndarray:
        """Where these jobs sit in this view (ids not in it are left out), ascending."""
        rows = [r for r in map(self._store.row_of.get, ids) if r is not None]
        if not rows:
            return np.zeros(0, np.int64)
        wanted = np.asarray(rows, np.int64)
        if wanted.size <= 8:  # a few ids (a cycle's reservations): one comparison, not isin's sort
            return np.flatnonzero((self.idx[:, None] == wanted).any(axis=1))
        return np.flatnonzero(np.isin(self.idx, wanted))

    def ids(self) -> list[JobId]:
        jobs = self._store.jobs
        return [jobs[i].job.id for i in self.idx.tolist()]


class PendingQueue(Sequence[PendingJob]):
    """The driver's pending queue, kept as columns across cycles (see the module docstring).

    As a sequence it lists the waiting jobs in the order they were added, as the list a driver
    built before did; ``CycleInput.pending`` takes it where it took that list."""

    def __init__(self, jobs: Iterable[PendingJob] = ()) -> None:
        self._store = _Store()
        self._row: dict[JobId, int] = {}
        self._alive = np.zeros(0, bool)
        self._order: np.ndarray | None = None     # live rows in priority-FIFO order
        self._added: list[int] = []               # rows added since ``_order`` was built
        self._removed = False                     # rows removed since ``_order`` was built
        self._live: np.ndarray | None = None      # live rows in input order (cache)
        self._shapes: ShapeClasses | None = None  # built on first use, then kept (``shapes``)
        self._bound = 0                           # queued jobs with pods bound (partial gangs)
        #: Every request of every job ever queued asks for whole GPUs, CPUs and memory (a
        #: shape class's requests are its key's: checked once per class).
        self.integral = True
        self.extend(jobs)

    # ---- what a driver does -----------------------------------------------------------------

    def add(self, pj: PendingJob) -> None:
        """Queue ``pj`` (a job already queued is replaced: its ``bound`` pods changed)."""
        if pj.job.id in self._row:
            self.remove(pj.job.id)
        classes = len(self._store.classes)
        row = self._store.append(pj)
        if len(self._store.classes) > classes and self.integral:
            self.integral = all(float(x).is_integer() for ps in pj.job.pod_sets
                                for x in (ps.request.gpus, ps.request.cpus, ps.request.memory_gb))
        if row >= self._alive.size:
            alive = np.zeros(max(2 * self._alive.size, row + 1, 64), bool)
            alive[: self._alive.size] = self._alive
            self._alive = alive
        self._alive[row] = True
        self._row[pj.job.id] = row
        self._added.append(row)
        self._live = None
        if self._shapes is not None:
            self._shapes.add(pj.job)
        self._bound += bool(pj.bound)

    def refresh(self, pj: PendingJob) -> None:
        """Swap in a new ``PendingJob`` for the same queued job (its ``bound`` pods changed),
        keeping its place in the queue; the job itself, hence every column, is unchanged. Views
        taken earlier see the new one too (they read jobs, and the job is the same)."""
        row = self._row[pj.job.id]
        old = self._store.jobs[row]
        if old.job is not pj.job:
            raise ValueError(f"refresh of {pj.job.id!r} with a different Job; remove and add it")
        self._bound += bool(pj.bound) - bool(old.bound)
        self._store.jobs[row] = pj

    def extend(self, jobs: Iterable[PendingJob]) -> None:
        """``add`` of each in turn; new ids (none queued, none twice) in one step."""
        batch = list(jobs)
        ids = {pj.job.id for pj in batch}
        if len(ids) < len(batch) or not ids.isdisjoint(self._row):
            for pj in batch:
                self.add(pj)
            return
        rows = self._store.extend(batch)
        if rows.stop > self._alive.size:
            alive = np.zeros(max(2 * self._alive.size, rows.stop, 64), bool)
            alive[: self._alive.size] = self._alive
            self._alive = alive
        self._alive[rows.start:rows.stop] = True
        self._row.update(zip((pj.job.id for pj in batch), rows, strict=True))
        self._added.extend(rows)
        self._live = None
        if self.integral:
            self.integral = all(float(x).is_integer() for pj in batch for ps in pj.job.pod_sets
                                for x in (ps.request.gpus, ps.request.cpus, ps.request.memory_gb))
        if self._shapes is not None:
            for pj in batch:
                self._shapes.add(pj.job)
        self._bound += sum(bool(pj.bound) for pj in batch)

    def remove(self, job: JobId) -> PendingJob:
        """Take ``job`` out of the queue (it started, or was cancelled); KeyError if absent."""
        row = self._row.pop(job)
        self._alive[row] = False
        self._removed = True
        self._live = None
        pj = self._store.jobs[row]
        if self._shapes is not None:
            self._shapes.remove(pj.job)
        self._bound -= bool(pj.bound)
        return pj

    def discard(self, job: JobId) -> None:
        if job in self._row:
            self.remove(job)

    def __contains__(self, job: object) -> bool:
        """A queued ``PendingJob`` (this very one), or a queued job id."""
        if isinstance(job, PendingJob):
            return self.get(job.job.id) is job
        return job in self._row

    def get(self, job: JobId) -> PendingJob | None:
        row = self._row.get(job)
        return None if row is None else self._store.jobs[row]

    @property
    def shapes(self) -> ShapeClasses:
        """The same jobs by shape class, each class in priority-FIFO order (engine/shape_classes.py);
        built from the queue at the first call (a driver whose profile never cuts never pays for
        it), then kept up to date by ``add`` and ``remove``."""
        if self._shapes is None:
            self._shapes = ShapeClasses()
            for pj in self.view():
                self._shapes.add(pj.job)
        return self._shapes

    @property
    def partial(self) -> bool:
        """Some queued job holds bound pods (a partially placed gang)."""
        return self._bound > 0

    @property
    def positions(self) -> Mapping[JobId, int]:
        """Per queued job, a rank of its place in the order added (``view()``'s order)."""
        return self._row

    # ---- what the engine reads --------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._row)

    def _live_rows(self) -> np.ndarray:
        if self._live is None:
            self._maybe_compact()
            self._live = np.flatnonzero(self._alive[: self._store.n])
        return self._live

    @overload
    def __getitem__(self, i: int) -> PendingJob: ...

    @overload
    def __getitem__(self, i: slice) -> QueueView: ...

    def __getitem__(self, i: int | slice) -> PendingJob | QueueView:
        return self.view()[i]

    def __iter__(self) -> Iterator[PendingJob]:
        return iter(self.view())

    def view(self) -> QueueView:
        """Every waiting job, in the order added."""
        rows = self._live_rows()  # first: it may compact, which replaces the store
        return QueueView(self._store, rows)

    def priority_order(self) -> QueueView:
        """Every waiting job by (−priority, submit time, id, order added): ``priority_fifo``'s
        order, kept across cycles."""
        self._maybe_compact()
        store, alive = self._store, self._alive
        if self._order is None or len(self._added) > len(self._row) // 4:
            rows = self._live_rows()
            ids = [store.jobs[r].job.id for r in rows.tolist()]
            self._order = rows[np.lexsort((id_ranks(ids), store.submit[rows], -store.prio[rows]))]
        else:
            order = self._order[alive[self._order]] if self._removed else self._order
            new = sorted((r for r in self._added if alive[r]), key=store.sort_key)
            if new:
                key = store.sort_key
                where = [bisect_right(order, key(r), key=key) for r in new]
                order = np.insert(order, where, new)
            self._order = order
        self._added, self._removed = [], False
        return QueueView(store, self._order)

    def _maybe_compact(self) -> None:
        """Rebuild the store without its dead rows once they outnumber the live ones. The old
        store is left as it was (views made over it stay valid)."""
        store, n_live = self._store, len(self._row)
        if store.n < _COMPACT_MIN or store.n - n_live <= n_live:
            return
        keep = np.flatnonzero(self._alive[: store.n])
        new = store.subset(keep)
        new_row = np.full(store.n, -1, np.int64)
        new_row[keep] = np.arange(keep.size)
        self._store = new
        self._row = {jid: int(new_row[r]) for jid, r in self._row.items()}
        self._alive = np.zeros(max(new.n, 64), bool)
        self._alive[: new.n] = True
        if self._order is not None:
            order = self._order[new_row[self._order] >= 0]
            self._order = new_row[order]
        self._added = [int(new_row[r]) for r in self._added if new_row[r] >= 0]
        self._live = None


def id_ranks(ids: list[str]) -> np.ndarray:
    """Each id's rank in Python string order, as integers a ``lexsort`` key can use; equal ids
    keep their input order, as the stable ``lexsort`` on the strings did. Python's own sort of
    the ids costs about half of building a numpy string array from 100,000 Python strings, and
    gives the same order (code points)."""
    n = len(ids)
    perm = sorted(range(n), key=ids.__getitem__)
    ranks = np.empty(n, np.int64)
    ranks[np.fromiter(perm, np.int64, n)] = np.arange(n, dtype=np.int64)
    return ranks
