"""Outcome as data: every job the cycle did not start carries a Status saying why.

A job can be held back by several phases in one cycle: placement finds no room, reservation gives
it a start time, backfill finds it would delay that start, preemption starts evicting for it. Its
Status is the chain of all of them, merged by one rule (``merge``), never by whichever phase wrote
last. Phases record verdicts on a ``StatusBoard``; nothing else writes statuses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from gpufleet.model.ids import JobId


class StatusCode(StrEnum):
    SCHEDULED = "SCHEDULED"          # all pods bound this cycle
    WAIT = "WAIT"                    # feasible in principle, held back (partial gang, behind a reservation)
    UNSCHEDULABLE = "UNSCHEDULABLE"  # does not fit the free capacity now
    UNRESOLVABLE = "UNRESOLVABLE"    # can never fit this fleet, even empty
    NOT_ADMITTED = "NOT_ADMITTED"    # admission (quota) refused it


@dataclass(frozen=True, slots=True)
class Status:
    code: StatusCode
    reasons: tuple[str, ...] = ()
    policy: str = ""
    estimated_start: float | None = None

    def explain(self) -> str:
        head = f"{self.code}" + (f" [{self.policy}]" if self.policy else "")
        return head + (": " + "; ".join(self.reasons) if self.reasons else "")


@dataclass(frozen=True, slots=True)
class Shortfall:
    """What a workload lacks of one resource in one flavor of its queue's quota: it needs
    ``needed`` more, the quota lets the queue take ``available`` more now (borrowing counted), so
    it is short by ``needed − available``. In the ledger's units (policies/quota.py)."""

    resource: str
    flavor: str
    needed: int
    available: int

    @property
    def short(self) -> int:
        return self.needed - self.available


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def status_shape(status: Status) -> tuple:
    """A status without its numbers: code, policy and reasons with every number replaced. Free-GPU
    counts and times move every cycle; a driver that logs statuses on change compares these, and
    a carried-on cycle promises a verdict of the same shape."""
    return (status.code, status.policy, _stripped(status.reasons))


@lru_cache(maxsize=4096)  # a congested queue sees the same few reason texts again and again
def _stripped(reasons: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(_NUMBER.sub("#", r) for r in reasons)


def merge(earlier: Status, later: Status) -> Status:
    """The one rule that combines two phases' verdicts on the same job in the same cycle.

    - reasons: the earlier chain, then the later phase's reasons that are not already in it (a
      phase that repeats a reason adds nothing; the chain reads in phase order);
    - code and policy: the later phase's, because it looked last and says what holds the job back
      at the end of the cycle — except UNRESOLVABLE, which no later phase can undo (a job that can
      never fit this fleet does not start to "wait" for anything);
    - estimated_start: the later phase's estimate when it gives one, else the earlier one (a phase
      that knows nothing about the start time never erases the schedule's estimate).
    """
    reasons = earlier.reasons + tuple(r for r in later.reasons if r not in earlier.reasons)
    code, policy = later.code, later.policy
    if earlier.code is StatusCode.UNRESOLVABLE:
        code, policy = earlier.code, earlier.policy
    start = later.estimated_start if later.estimated_start is not None else earlier.estimated_start
    return Status(code, reasons, policy, start)


class StatusBoard(Mapping[JobId, Status]):
    """The cycle's statuses: read like a mapping, written only through ``record``/``note``.

    Every write goes through ``merge``, so the order in which phases run cannot make one erase
    what another found.

    Bulk writes are lazy. A backfill pass settles 100,000 jobs and the cycle's fallback names
    every admitted job, which costs 0.1–0.3 s of Python per cycle, while most callers (the
    simulator, a benchmark's drain) never read a status. ``record_later`` and ``default`` queue
    the write; the queue is applied, in the order the writes were made, the first time anyone
    reads the board or writes to it one job at a time. So a read sees exactly what eager writes
    would have produced (same statuses, same iteration order), and a cycle nobody asks about
    pays nothing for 100,000 reasons.
    """

    __slots__ = ("_by_job", "_deferred")

    def __init__(self) -> None:
        self._by_job: dict[JobId, Status] = {}
        self._deferred: list[Callable[[], None]] = []

    def _settle(self) -> dict[JobId, Status]:
        """Apply the queued bulk writes, oldest first; the settled map."""
        while self._deferred:
            ops, self._deferred = self._deferred, []
            for op in ops:
                op()
        return self._by_job

    def __getitem__(self, job: JobId) -> Status:
        return self._settle()[job]

    def __iter__(self) -> Iterator[JobId]:
        return iter(self._settle())

    def __len__(self) -> int:
        return len(self._settle())

    def __contains__(self, job: object) -> bool:
        return job in self._settle()

    def get(self, job: JobId, default: Status | None = None) -> Status | None:  # type: ignore[override]
        return self._settle().get(job, default)

    def record(self, job: JobId, status: Status) -> None:
        """A phase's verdict on ``job``, chained after any earlier verdict this cycle."""
        board = self._settle()
        old = board.get(job)
        board[job] = status if old is None else merge(old, status)

    def record_many(self, jobs: Iterable[JobId], statuses: Iterable[Status]) -> None:
        """``record`` for many jobs at once: one ``dict.update`` (a backfill pass settles 100,000
        jobs), then the few jobs an earlier phase had judged are merged. Costs O(jobs + earlier
        verdicts), no Python step per job."""
        board = self._settle()
        earlier = dict(board)
        board.update(zip(jobs, statuses, strict=True))
        for job, old in earlier.items():
            new = board[job]
            if new is not old:
                board[job] = merge(old, new)

    def record_later(self, verdicts: Callable[[], tuple[Iterable[JobId], Iterable[Status]]]) -> None:
        """``record_many(*verdicts())``, applied when the board is next read or written one job at
        a time. ``verdicts`` must read only data that no one changes afterwards."""
        self._deferred.append(lambda: self.record_many(*verdicts()))

    def note(self, job: JobId, reason: str, policy: str, *, estimated_start: float | None = None,
             code: StatusCode = StatusCode.UNSCHEDULABLE) -> None:
        """Append ``reason`` to the job's chain, keeping its code (``code`` is used only when the
        job has no status yet), and set its estimated start when one is given."""
        old = self._settle().get(job)
        base = old.code if old is not None else code
        pol = old.policy if old is not None else policy
        self.record(job, Status(base, (reason,), pol, estimated_start))

    def default(self, jobs: Iterable[JobId], status: Status) -> None:
        """``status`` for every job in ``jobs`` that no phase judged (the cycle's fallback).
        Lazy, like ``record_later``: ``jobs`` is walked when the board is next read."""
        self._deferred.append(lambda: self._default_now(jobs, status))

    def _default_now(self, jobs: Iterable[JobId], status: Status) -> None:
        board = self._by_job
        for job in jobs:
            if job not in board:
                board[job] = status

    def discard(self, job: JobId) -> None:
        """The job started: it has no reason to wait (queued behind pending bulk writes)."""
        if self._deferred:
            self._deferred.append(lambda: self._drop(job))
        else:
            self._drop(job)

    def _drop(self, job: JobId) -> None:
        self._by_job.pop(job, None)

    def snapshot(self) -> Mapping[JobId, Status]:
        """The statuses as the cycle's result: this board, read-only from here on (it has no
        setter); bulk writes still queued are applied on the first read."""
        return self
