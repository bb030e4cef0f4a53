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

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpufleet.engine.status import Status
from gpufleet.engine.types import CycleResult, Reservation
from gpufleet.model.ids import JobId
from gpufleet.sim.recorder import Recorder

if TYPE_CHECKING:
    from gpufleet.sim.greedy_cut import Cut
    from gpufleet.sim.shape_queues import ShapeQueues

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


#: Reasons with their numbers replaced, per reasons tuple: a congested queue sees the same few
#: reason texts again and again (bounded: cleared past _STRIPPED_MAX entries, since reasons that
#: carry times, such as reservation notes, are new every cycle: 4,096 entries are ~1 MiB).
_STRIPPED: dict[tuple[str, ...], tuple[str, ...]] = {}
_STRIPPED_MAX = 4096


def status_shape(status: Status) -> tuple:
    """What the log compares: code, policy and reasons with their numbers replaced."""
    stripped = _STRIPPED.get(status.reasons)
    if stripped is None:
        if len(_STRIPPED) >= _STRIPPED_MAX:
            _STRIPPED.clear()
        stripped = _STRIPPED[status.reasons] = tuple(_NUMBER.sub("#", r) for r in status.reasons)
    return (status.code, status.policy, stripped)


def wait_detail(status: Status) -> str:
    est = "" if status.estimated_start is None else f" (estimated start t={status.estimated_start:.0f})"
    return status.explain() + est


@dataclass
class DecisionLog:
    #: Per pending job, the last status seen (by identity of its fields) and its shape when logged.
    _raw: dict[str, tuple] = field(default_factory=dict)
    _logged: dict[str, tuple] = field(default_factory=dict)
    _reserved: dict[str, tuple[int, bool]] = field(default_factory=dict)

    def record(self, rec: Recorder, t: float, result: CycleResult, names: tuple[str, ...],
               submit_times: dict[str, float]) -> None:
        self._reservations(rec, t, result.reservations, names)
        self._backfills(rec, t, result, submit_times)
        for jid, status in result.statuses.items():
            self.one(rec, t, jid, status)

    def one(self, rec: Recorder, t: float, jid: str, status: Status) -> None:
        """One waiting job's status: a line when its shape changed."""
        raw = (status.code, status.reasons, status.policy)
        if self._raw.get(jid) == raw:
            return
        self._raw[jid] = raw
        shape = status_shape(status)
        if self._logged.get(jid) != shape:
            self._logged[jid] = shape
            rec.event(t, "wait", jid, wait_detail(status))

    def record_cut(self, rec: Recorder, t: float, result: CycleResult, names: tuple[str, ...],
                   submit_times: dict[str, float], cut: Cut, shapes: ShapeQueues,
                   line_key: Callable[[JobId, Status], tuple]) -> None:
        """``record`` for a cut cycle (sim/greedy_cut.py): the engine judged the included jobs;
        every left-out job of a class gets the class's verdict. The lines are the ones ``record``
        would write for the full cycle, in its order (``line_key``: where the full cycle's status
        board lists the job), but only the jobs whose logged shape may differ are looked at: the
        class's dirty set while its verdict's shape stays the settled one, every left-out job of
        the class when it changes."""
        self._reservations(rec, t, result.reservations, names)
        self._backfills(rec, t, result, submit_times)
        lines: list[tuple[tuple, JobId, str]] = []
        for judged, status in result.statuses.items():
            raw = (status.code, status.reasons, status.policy)
            if self._raw.get(judged) == raw:
                continue
            self._raw[judged] = raw
            shape = status_shape(status)
            if self._logged.get(judged) != shape:
                self._logged[judged] = shape
                lines.append((line_key(judged, status), judged, wait_detail(status)))
        for c, (keys, k) in cut.classes.items():
            verdict = cut.verdicts[c]
            shape = status_shape(verdict)
            detail = ""
            if shapes.settled.get(c) == shape:
                included = {key[2] for key in keys[:k]}
                look = [jid for jid in shapes.dirty[c] if jid not in included]
            else:
                look = [key[2] for key in keys[k:]]
            for left_out in look:
                if self._logged.get(left_out) != shape:
                    self._logged[left_out] = shape
                    self._raw.pop(left_out, None)
                    detail = detail or wait_detail(verdict)
                    lines.append((line_key(left_out, verdict), left_out, detail))
        lines.sort()
        for _, waiting, line in lines:
            rec.event(t, "wait", waiting, line)
        for c in shapes.settled:
            if c not in cut.classes:
                shapes.settled[c] = None
        for c, (keys, k) in cut.classes.items():
            shape = status_shape(cut.verdicts[c])
            shapes.settled[c] = shape
            shapes.dirty[c] = {key[2] for key in keys[:k] if self._logged.get(key[2]) != shape}

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
