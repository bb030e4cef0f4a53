"""The simulated cluster: the state a driver keeps and the engine's decisions act upon."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.queue import PendingQueue
from gpufleet.engine.running import RunningColumns
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import PendingJob, RunningJob
from gpufleet.model.fleet import Fleet
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job


class RunningJobs(dict[JobId, RunningJob]):
    """The running jobs by id, with the same jobs kept as columns (``columns``,
    engine/running.py) that every change to the dict updates: a start adds a row, an end or an
    eviction removes it, a replaced run (notice given, an elastic resize) swaps it. So the engine
    reads the release schedule from columns instead of re-reading every running job's pods each
    cycle, whatever module changes the running set."""

    __slots__ = ("columns",)

    def __init__(self) -> None:
        super().__init__()
        self.columns = RunningColumns()

    def __setitem__(self, jid: JobId, rj: RunningJob) -> None:
        if jid != rj.job.id:  # the columns know a job by its own id: a mismatch would split them
            raise KeyError(f"running job {rj.job.id} stored under {jid}")
        if jid in self:
            self.columns.remove(jid)
        super().__setitem__(jid, rj)
        self.columns.add(rj)

    def __delitem__(self, jid: JobId) -> None:
        super().__delitem__(jid)
        self.columns.remove(jid)

    _MISSING = object()

    def pop(self, jid: JobId, default: object = _MISSING) -> RunningJob:  # type: ignore[override]
        if jid not in self:
            if default is RunningJobs._MISSING:
                raise KeyError(jid)
            return default  # type: ignore[return-value]
        rj = super().pop(jid)
        self.columns.remove(jid)
        return rj

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise TypeError("RunningJobs changes only by item assignment, del and pop")

    setdefault = update = popitem = clear = __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (_running_jobs, (list(self.items()),))


def _running_jobs(items: list[tuple[JobId, RunningJob]]) -> RunningJobs:
    out = RunningJobs()
    for jid, rj in items:
        out[jid] = rj
    return out


@dataclass
class SimulatedCluster:
    fleet: Fleet
    table: NodeTable = field(init=False)
    pending: dict[JobId, Job] = field(default_factory=dict)
    partial: dict[JobId, list[PodBinding]] = field(default_factory=dict)
    running: RunningJobs = field(default_factory=RunningJobs)
    #: Checkpointed progress (seconds of work) of jobs that were preempted and requeued.
    progress: dict[JobId, float] = field(default_factory=dict)
    #: The engine's view of the pending jobs, kept across cycles as columns (engine/queue.py: a
    #: 100,000-job queue is not re-read every cycle); jobs whose pods were bound since are
    #: refreshed on demand.
    _views: PendingQueue = field(default_factory=PendingQueue, repr=False)
    _stale: set[JobId] = field(default_factory=set, repr=False)
    #: Ids of jobs that (re)joined the queue since a reader last cleared it; None: not kept (the
    #: driver-compatibility filter turns it on: fleet_events/upgrade_compat.py).
    entered: list[JobId] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.table = NodeTable.from_fleet(self.fleet)

    def submit(self, job: Job) -> None:
        self.pending[job.id] = job
        self._views.add(PendingJob(job))
        if self.entered is not None:
            self.entered.append(job.id)

    def submit_all(self, jobs: Sequence[Job]) -> None:
        """``submit`` of each in turn, the engine's queue columns written at once."""
        for job in jobs:
            self.pending[job.id] = job
        self._views.extend([PendingJob(job) for job in jobs])
        if self.entered is not None:
            self.entered.extend(job.id for job in jobs)

    def withdraw(self, jid: JobId) -> Job | None:
        """Take a pending job out of the queue without starting it (its partial pods, if any, stay
        in ``partial`` for the caller to give back); the job, or None when it was not pending."""
        self._views.discard(jid)
        self._stale.discard(jid)
        return self.pending.pop(jid, None)

    def replace_pending(self, job: Job) -> None:
        """Swap a pending job for a changed copy of itself (same id; e.g. a new node filter, whose
        shape class differs): its bound pods stay bound; it rejoins the queue's input order last
        (the engine's priority-FIFO order reads priority, submit time and id, not that order)."""
        bound = self.partial.get(job.id)
        if self.withdraw(job.id) is None:
            raise KeyError(f"job {job.id} is not pending")
        self.submit(job)
        if bound:
            self._stale.add(job.id)

    def pending_view(self) -> PendingQueue:
        """The pending jobs in the order they were queued (the engine reads, never changes it)."""
        for jid in self._stale:
            if jid in self.pending:
                self._views.refresh(PendingJob(self.pending[jid], tuple(self.partial.get(jid, ()))))
        self._stale.clear()
        return self._views

    def view(self, jid: JobId) -> PendingJob:
        """The engine's view of one pending job (refreshed if its pods were bound since)."""
        if jid in self._stale:
            self._stale.discard(jid)
            self._views.refresh(PendingJob(self.pending[jid], tuple(self.partial.get(jid, ()))))
        view = self._views.get(jid)
        assert view is not None, f"job {jid} is not pending"
        return view

    def running_view(self) -> list[RunningJob]:
        return list(self.running.values())

    def bind(self, b: PodBinding) -> None:
        self.table.take(b.node, b.request, slot=b.slot)
        self.partial.setdefault(b.job, []).append(b)
        self._stale.add(b.job)

    def start(self, jid: JobId, now: float) -> RunningJob:
        job = self.pending.pop(jid)
        self._views.discard(jid)
        self._stale.discard(jid)
        rj = RunningJob(job, now, tuple(self.partial.pop(jid, ())), self.progress.get(jid, 0.0),
                        resumed=jid in self.progress)
        assert len(rj.bindings) == job.total_pods, f"job {jid} started with a partial gang"
        self.running[jid] = rj
        return rj

    def finish(self, jid: JobId) -> RunningJob:
        rj = self.running.pop(jid)
        for b in rj.bindings:
            self.table.give(b.node, b.request, slot=b.slot)
        self.progress.pop(jid, None)
        return rj

    def mark_evicting(self, jid: JobId, evict_at: float) -> None:
        self.running[jid] = replace(self.running[jid], evicting=True, evict_at=evict_at)

    def evict(self, jid: JobId, saved_progress: float) -> RunningJob:
        """Release a whole gang and requeue it; it resumes from ``saved_progress`` seconds of work."""
        rj = self.running.pop(jid)
        for b in rj.bindings:
            self.table.give(b.node, b.request, slot=b.slot)
        self.progress[jid] = saved_progress
        self.pending[jid] = rj.job
        self._views.add(PendingJob(rj.job))
        if self.entered is not None:
            self.entered.append(jid)
        return rj

    def unbind_on(self, node: int) -> list[JobId]:
        """A node leaves service: pods bound there by waiting (partially placed) jobs are released
        and go back to pending; the jobs they belonged to."""
        hit = []
        for jid, bs in list(self.partial.items()):
            gone = [b for b in bs if b.node == node]
            if not gone:
                continue
            for b in gone:
                self.table.give(b.node, b.request, slot=b.slot)
            kept = [b for b in bs if b.node != node]
            if kept:
                self.partial[jid] = kept
            else:
                del self.partial[jid]
            self._stale.add(jid)
            hit.append(jid)
        return hit

    @property
    def held_by_partial_gangs(self) -> int:
        return sum(b.request.gpus for bs in self.partial.values() for b in bs)

    @property
    def busy_gpus(self) -> int:
        """GPUs held by running jobs: every GPU not free, less those partial gangs hold idle (a GPU
        hosting MIG instances or soft shares of a running job counts as working)."""
        return self.table.gpus_allocated - self.held_by_partial_gangs


def set_schedulable(table: NodeTable, node: int, ok: bool) -> None:
    """Put a node in or out of service for the engine ("the engine never places on a node outside
    healthy"): the ``schedulable`` column and the free-capacity index move together."""
    if bool(table.schedulable[node]) == ok:
        return
    if table.index is not None:
        table.index.count(int(table.model_idx[node]), int(table.gpu_free[node]), 1 if ok else -1)
    table.schedulable[node] = ok
