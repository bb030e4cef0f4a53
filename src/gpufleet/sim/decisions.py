"""The per-job decision log: why each waiting job waits, what was reserved, what was backfilled.

Written into the event log beside submit/start/finish so that "why did job X wait 6 hours" is
answerable from a run's files alone (``gpufleet explain JOB --run DIR``). Three event kinds:

- ``wait``: a pending job's Status (code, policy, reasons, estimated start) — logged when it
  changes, not every cycle. "Changes" ignores numbers inside the reasons (free-GPU counts and times
  move every cycle; a new log line each time would bury the one that matters).
- ``reserve``: a reservation was made or its start moved — protected ones are
  promises backfill may not break, the others are the schedule's estimates.
- ``backfill``: a job started while a job queued ahead of it (by submit time) held a protected
  reservation: it went past the head without delaying it.

Cost: one dict lookup and tuple comparison per waiting job per cycle; the regex runs only when a
status's text changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpufleet.engine.status import Status, status_shape
from gpufleet.engine.types import CycleResult, Reservation
from gpufleet.model.ids import JobId
from gpufleet.sim.recorder import Recorder

if TYPE_CHECKING:
    from gpufleet.engine.queue import PendingQueue

def _in_class(queue: PendingQueue, jid: JobId, key: tuple) -> bool:
    pj = queue.get(jid)
    return pj is not None and pj.job.shape_key == key


def wait_detail(status: Status) -> str:
    est = "" if status.estimated_start is None else f" (estimated start t={status.estimated_start:.0f})"
    return status.explain() + est


@dataclass
class DecisionLog:
    #: Per pending job, the last status seen (by identity of its fields) and its shape when logged.
    _raw: dict[str, tuple] = field(default_factory=dict)
    _logged: dict[str, tuple] = field(default_factory=dict)
    _reserved: dict[str, tuple[int, bool]] = field(default_factory=dict)
    #: Per shape class the last cut cycle cut: its verdict's shape, and the included jobs logged
    #: otherwise; ``_mark``: the queue's join position then (``record_cut``).
    _settled: dict[tuple, tuple] = field(default_factory=dict)
    _unsettled: dict[tuple, set[JobId]] = field(default_factory=dict)
    _mark: int = 0

    def record(self, rec: Recorder, t: float, result: CycleResult, names: tuple[str, ...],
               submit_times: dict[str, float]) -> None:
        self._reservations(rec, t, result.reservations, names)
        self._backfills(rec, t, result, submit_times)
        for jid, status in result.statuses.items():
            self.one(rec, t, jid, status)

    def one(self, rec: Recorder, t: float, jid: str, status: Status) -> None:
        """One waiting job's status: a line when its shape changed."""
        if self._changed(jid, status):
            rec.event(t, "wait", jid, wait_detail(status))

    def _changed(self, jid: str, status: Status) -> bool:
        raw = (status.code, status.reasons, status.policy)
        if self._raw.get(jid) == raw:
            return False
        self._raw[jid] = raw
        shape = status_shape(status)
        if self._logged.get(jid) == shape:
            return False
        self._logged[jid] = shape
        return True

    def record_cut(self, rec: Recorder, t: float, result: CycleResult, names: tuple[str, ...],
                   submit_times: dict[str, float], queue: PendingQueue,
                   line_key: Callable[[JobId, Status], tuple]) -> None:
        """``record`` for a cut cycle (engine/cut.py; ``CycleResult.left_out``): the lines
        ``record`` would write for the full cycle, in its order (``line_key``: where its status
        board lists the job), looking only at jobs whose logged shape may differ. While a class's
        verdict keeps the shape it had at the last cut cycle (``_settled``), every left-out job in
        the class then is logged with it, unless it was included then and logged otherwise
        (``_unsettled``): those and the ones that joined since (``ShapeClasses.joined_since``) are
        looked at; when the shape changed, every left-out job of the class."""
        self._reservations(rec, t, result.reservations, names)
        self._backfills(rec, t, result, submit_times)
        lines = [(line_key(jid, status), jid, wait_detail(status))
                 for jid, status in result.statuses.items() if self._changed(jid, status)]
        joined: dict[tuple, list[JobId]] = {}
        for jid in queue.shapes.joined_since(self._mark):
            pj = queue.get(jid)
            if pj is not None:
                joined.setdefault(pj.job.shape_key, []).append(jid)
        settled: dict[tuple, tuple] = {}
        unsettled: dict[tuple, set[JobId]] = {}
        for left in result.left_out:
            c, verdict = left.key, left.verdict
            shape = status_shape(verdict)
            included = {key[2] for key in left.keys[:left.included]}
            if self._settled.get(c) == shape:
                look = [jid for jid in (*self._unsettled.get(c, ()), *joined.get(c, ()))
                        if jid not in included and _in_class(queue, jid, c)]
            else:
                look = left.ids()
            detail = ""
            for left_out in look:
                if self._logged.get(left_out) != shape:
                    self._logged[left_out] = shape
                    self._raw.pop(left_out, None)
                    detail = detail or wait_detail(verdict)
                    lines.append((line_key(left_out, verdict), left_out, detail))
            settled[c] = shape
            unsettled[c] = {jid for jid in included if self._logged.get(jid) != shape}
        lines.sort()
        for _, waiting, line in lines:
            rec.event(t, "wait", waiting, line)
        self._settled, self._unsettled, self._mark = settled, unsettled, queue.shapes.mark

    def unsettle(self) -> None:
        """Statuses were logged for every job (an uncut cycle): no class's settled shape holds."""
        self._settled, self._unsettled = {}, {}

    def started(self, jid: str) -> None:
        """A job left the queue: its next wait (after a preemption or failure) is logged afresh."""
        self._raw.pop(jid, None)
        self._logged.pop(jid, None)
        self._reserved.pop(jid, None)

    def _reservations(self, rec: Recorder, t: float, reservations: tuple[Reservation, ...],
                      names: tuple[str, ...]) -> None:
        for r in reservations:
            key = (round(r.start), r.protected)
            if self._reserved.get(r.job) == key:
                continue
            self._reserved[r.job] = key
            shown = ",".join(names[i] for i in r.nodes[:4]) + ("…" if len(r.nodes) > 4 else "")
            kind = "protected" if r.protected else "estimate"
            rec.event(t, "reserve", r.job, f"{kind} start t={r.start:.0f} on {len(r.nodes)} node(s) {shown}")

    def _backfills(self, rec: Recorder, t: float, result: CycleResult,
                   submit_times: dict[str, float]) -> None:
        heads = [(submit_times.get(r.job, 0.0), r.job, r.start) for r in result.reservations
                 if r.protected and r.start > t]
        if not heads:
            return
        for jid in result.started:
            ahead = [(s, h, start) for s, h, start in heads if (s, h) < (submit_times.get(jid, 0.0), jid)]
            if ahead:
                _, head, start = min(ahead)
                rec.event(t, "backfill", jid,
                          f"started ahead of {head} (queued earlier, reserved from t={start:.0f}) "
                          f"without delaying it")
