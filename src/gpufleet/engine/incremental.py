"""The incremental cycle: a driver says what changed since the last cycle; the engine owns its memo.

Interface (every driver: the simulator, the service's live loop, Slurm, Kubernetes)::

    memo = CycleMemo()                                   # once, before the first cycle
    ...
    result, memo = run_incremental(memo, delta, inp)     # at every cycle, instead of run_cycle(inp)

- ``CycleDelta``: what changed since the cycle ``memo`` came from: the jobs that arrived (in the
  order they joined the queue), the runs that ended, the node rows whose capacity or health
  changed by anything but those ends and the cycle's own bindings, and ``other`` for everything
  else (a withdrawal, an eviction, a requeue, a cadence tick, a change the driver did not follow).
  ``CycleDelta.unknown()`` is always correct: it asks for the full cycle. A driver need not run a
  cycle while no job waits, nor report what changed then: a cycle over an empty queue decides
  nothing, and no rule below rests on a job that was not waiting at the memo's cycle (rule 4
  also rests on the running set: a driver says such a change happened with ``gap``).
- ``CycleMemo``: what the last cycle decided that a later one can reuse. Opaque to drivers: they
  keep it and hand it back, never read or build its fields (but ``carry_scans``, rule 4 on or
  off, given to the first one). It is tied to the profile it was made
  under (another profile starts afresh).
- ``run_incremental`` answers from the memo when one of the rules below proves the full cycle
  would decide the same, and runs the cycle otherwise (cut, where rule 3 applies); either way it
  returns the decisions as a ``CycleResult`` (``stats.reused`` names the rule, "" for a cycle that
  ran) and the next memo. A reused result holds statuses only for the jobs it judged (the
  arrivals): every other waiting job keeps the status it last had, which is what a driver that
  logs on change needs. A cut result holds statuses for the jobs the cycle saw, and per shape
  class the verdict of the jobs it left out (``CycleResult.left_out``).
- ``verify=True`` runs the full cycle beside every reused or cut answer and raises
  ``IncrementalMismatch`` when they decide differently (the tests and benchmarks turn it on).

Which rule may fire is declared by the policies (engine/reuse.py, ``CycleReuse``), never found by
checking concrete types. The rules, each with the premises it checks and why it is exact:

1. *Unfit arrivals* (``CycleReuse.unfit_arrivals``: greedy whole-gang placement in any order, all
   other steps inert). News: arrivals only, each one pod set the free-capacity index proves too big
   (``NodeTable.cannot_fit``). Since the last cycle nothing freed capacity; in it every waiting job
   was examined and did not fit, or was placed; capacity only shrank since. Feasibility is monotone
   in free capacity, so those jobs fail again, and the new ones cannot fit: nothing starts, and
   each arrival gets UNSCHEDULABLE "more GPUs than the free capacity holds now".
2. *Behind the stop* (``CycleReuse.behind_stop``: strict-FIFO gang best fit in priority-FIFO order,
   all other steps inert). News: arrivals only, each sorting after the job the last pass stopped at
   (by (−priority, submit time, id)), which still waits. The pass tries the same jobs on the same
   table in the same order and stops at the same job; every job behind it, the arrivals included,
   gets the status for jobs the pass did not reach.
3. *The cut* (``CycleReuse.cut``: the same policies as 1 or 2; any news). The cycle runs on the
   head of each shape class only, read from the driver's ``PendingQueue``; the proof and its
   checks are in engine/cut.py.
4. *Carried on* (``CycleReuse.carry_scan``: strict-FIFO gang placement, reservations kept as
   promises, a backfiller that implements ``ScanCarrier``). News: arrivals and/or ends, with no
   gap. The last full cycle's backfill scan is continued over the arrivals, its reservations
   kept; the premises and the proof are the backfiller's (policies/backfill_carry.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from gpufleet.engine.cut import cut_cycle
from gpufleet.engine.cycle import run_cycle, unexamined_status
from gpufleet.engine.phases.order import OrderKey, order_key
from gpufleet.engine.profile import Profile
from gpufleet.engine.queue import PendingQueue
from gpufleet.engine.reuse import CycleReuse
from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import AdmissionState, CycleInput, CycleResult, CycleStats, PendingJob, RunningJob
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job

UNFIT_ARRIVALS, BEHIND_STOP, CARRIED = "unfit-arrivals", "behind-stop", "carried"
UNFIT_REASON = "more GPUs than the free capacity holds now (no cycle run: nothing was freed)"


@dataclass(frozen=True, slots=True)
class CycleDelta:
    """What changed since the cycle the memo came from (see the module docstring)."""

    arrived: tuple[Job, ...] = ()
    ended: tuple[RunningJob, ...] = ()
    #: Node rows changed by anything but ``ended`` and the last cycle's own bindings.
    nodes: tuple[int, ...] = ()
    #: Anything else changed, or the driver does not know what did: no reuse.
    other: bool = False
    #: Something may have changed since the memo's cycle that this delta does not list: a change
    #: at an instant with no cycle (the queue was empty), or effects on running jobs the driver
    #: does not report one by one (the simulator's failure model). Rules 1–3 rest on no such
    #: change (see above); rule 4 rests on every end being listed, and refuses.
    gap: bool = False

    @classmethod
    def unknown(cls) -> CycleDelta:
        return cls(other=True)

    @property
    def arrivals_only(self) -> bool:
        return bool(self.arrived) and not (self.ended or self.nodes or self.other)


@runtime_checkable
class ScanCarrier(Protocol):
    """A backfiller whose scan a later cycle may carry on (rule 4). ``remember_scan`` is asked
    after every full cycle (``promises``: the reservations such a cycle keeps); ``carry_scan``
    answers a later cycle from what it kept (``stats.reused`` = ``CARRIED``), or None. The
    state is the backfiller's own and may be updated in place: a memo is consumed by the call it
    is handed to."""

    def remember_scan(self, inp: CycleInput, result: CycleResult, promises: int,
                      verify: bool) -> object | None: ...

    def carry_scan(self, state: object, delta: CycleDelta, inp: CycleInput,
                   verify: bool) -> tuple[CycleResult, object] | None: ...


@dataclass(frozen=True, slots=True)
class CycleMemo:
    """What the last cycle decided that a later one can reuse (owned by the engine)."""

    #: The profile the memo was made under, and what its policies declared they can reuse.
    profile: Profile | None = None
    reuse: CycleReuse = CycleReuse()
    #: Strict FIFO: the job the last pass stopped at, and its order key.
    stop: JobId | None = None
    stop_key: OrderKey | None = None
    #: Rule 4: the profile's backfiller when it carries scans on, and what it kept of its last
    #: scan (its own type; None: nothing to carry).
    carrier: ScanCarrier | None = None
    scan: object | None = None
    #: The one field a driver may set (when it makes the first memo): False keeps rule 4 off,
    #: where few cycles qualify and its checks cost more than they save (the what-if's fork).
    carry_scans: bool = True

    def under(self, profile: Profile) -> CycleMemo:
        """This memo, or a fresh one when it was made under another profile."""
        if self.profile is profile:
            return self
        reuse = CycleReuse.of(profile)
        carrier = profile.backfiller if reuse.carry_scan and self.carry_scans else None
        return CycleMemo(profile=profile, reuse=reuse,
                         carrier=carrier if isinstance(carrier, ScanCarrier) else None,
                         carry_scans=self.carry_scans)


class IncrementalMismatch(AssertionError):
    """A reused answer decided otherwise than the full cycle (a gap in a rule's proof)."""


def run_incremental(memo: CycleMemo, delta: CycleDelta, inp: CycleInput, *,
                    verify: bool = False) -> tuple[CycleResult, CycleMemo]:
    """The cycle at ``inp``, reusing what ``memo`` proves unchanged; and the next memo."""
    memo = memo.under(inp.profile)
    reused = _reuse(memo, delta, inp)
    if reused is not None:
        if verify:
            check(reused, run_cycle(inp))
        return reused, memo
    carrier = memo.carrier
    if (carrier is not None and memo.scan is not None and (delta.arrived or delta.ended)
            and not (delta.other or delta.nodes or delta.gap)):
        carried = carrier.carry_scan(memo.scan, delta, inp, verify)
        if carried is not None:
            return carried[0], replace(memo, scan=carried[1])
    if memo.reuse.cut is None:
        result = run_cycle(inp)
    else:
        result = cut_cycle(inp, memo.reuse.cut, run_cycle)
        if verify and result.left_out:
            check(result, run_cycle(inp))
    memo = remember(memo, inp, result)
    if carrier is not None:
        memo = replace(memo, scan=carrier.remember_scan(inp, result, memo.reuse.promises, verify))
    return result, memo


def remember(memo: CycleMemo, inp: CycleInput, result: CycleResult) -> CycleMemo:
    """The memo after a full cycle on ``inp`` decided ``result``."""
    memo = memo.under(inp.profile)
    if not memo.reuse.behind_stop:
        return memo
    stop = None
    for jid, status in result.statuses.items():
        if status.code is StatusCode.UNSCHEDULABLE:
            stop = jid
    job = _job_of(inp.pending, stop) if stop is not None else None
    if job is None:
        return replace(memo, stop=None, stop_key=None)
    return replace(memo, stop=stop, stop_key=order_key(job))


def _reuse(memo: CycleMemo, delta: CycleDelta, inp: CycleInput) -> CycleResult | None:
    if not delta.arrivals_only:
        return None
    reuse, name = memo.reuse, inp.profile.name
    if reuse.unfit_arrivals and all(_cannot_fit(job, inp) for job in delta.arrived):
        unfit = Status(StatusCode.UNSCHEDULABLE, (UNFIT_REASON,), name)
        return _answer(inp, dict.fromkeys((j.id for j in delta.arrived), unfit), UNFIT_ARRIVALS)
    if (reuse.behind_stop and memo.stop is not None and memo.stop_key is not None
            and memo.stop in _ids(inp.pending)
            and all(order_key(job) > memo.stop_key for job in delta.arrived)):
        past = unexamined_status(name)
        return _answer(inp, dict.fromkeys((j.id for j in delta.arrived), past), BEHIND_STOP)
    return None


def _answer(inp: CycleInput, statuses: dict[JobId, Status], rule: str) -> CycleResult:
    """A cycle that starts, reserves and evicts nothing (every rule's answer), with admission's
    state as an inert admitter leaves it."""
    return CycleResult(bindings=(), started=(), statuses=statuses, admission=AdmissionState(),
                       stats=CycleStats(pending=len(inp.pending), reused=rule))


def _cannot_fit(job: Job, inp: CycleInput) -> bool:
    if len(job.pod_sets) != 1:
        return False
    ps = job.pod_sets[0]
    return inp.nodes.cannot_fit(ps.request, ps.replicas)


def _ids(pending: Sequence[PendingJob]) -> PendingQueue | set[JobId]:
    """Something ``in`` answers for job ids: the driver's queue itself, or the ids of a list."""
    return pending if isinstance(pending, PendingQueue) else {pj.job.id for pj in pending}


def _job_of(pending: Sequence[PendingJob], jid: JobId) -> Job | None:
    if isinstance(pending, PendingQueue):
        pj = pending.get(jid)
        return pj.job if pj is not None else None
    return next((pj.job for pj in pending if pj.job.id == jid), None)


def check(reused: CycleResult, full: CycleResult, *, where: str = "",
          earlier: Mapping[JobId, Status] | None = None,
          shape: Callable[[Status], object] | None = None) -> None:
    """Verify mode: the reused answer decides what the full cycle does: the same starts,
    bindings, reservations and evictions, and each judged job held back with the same code
    (the exact status where the rule promises it: jobs past a strict-FIFO stop).

    A cut cycle promises the exact status of every job it saw and of every job it left out.
    A carried-on cycle (the simulator's EASY carry) promises more, and says so with ``earlier``
    (the verdicts every waiting job last had) and ``shape`` (a status without its numbers): each
    job it judged gets the full cycle's exact status, every job in ``earlier`` keeps a verdict of
    the same shape, and the full cycle judges no job beyond those two. ``where`` names the
    instant in the error."""
    rule = reused.stats.reused or ("cut" if reused.left_out else CARRIED)

    def need(ok: bool, what: object) -> None:
        if not ok:
            raise IncrementalMismatch(f"{where}{rule}: {what}")

    need(full.started == reused.started, ("started", full.started, reused.started))
    need(full.bindings == reused.bindings, "bindings")
    need(full.reservations == reused.reservations, ("reservations", full.reservations))
    need(full.preemptions == reused.preemptions, ("preemptions", full.preemptions))
    exact = reused.stats.reused == BEHIND_STOP or shape is not None or bool(reused.left_out)
    for jid, status in reused.statuses.items():
        got = full.statuses.get(jid)
        need(got is not None and got.code is status.code, (jid, got, status))
        if exact:
            need(got == status, (jid, got, status))
    for left in reused.left_out:
        for jid in left.ids():
            need(full.statuses.get(jid) == left.verdict, (jid, "left out", full.statuses.get(jid)))
    if shape is None:
        return
    for jid, status in full.statuses.items():
        if earlier is not None and jid in earlier:
            need(shape(status) == shape(earlier[jid]), (jid, status, earlier[jid]))
        else:
            need(jid in reused.statuses, (jid, "judged by the full cycle only", status))
