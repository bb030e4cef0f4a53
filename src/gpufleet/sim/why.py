"""Why did job X wait: a job's story read back from a run's event logs (events-<policy>.jsonl).

Each ``wait`` event (sim/decisions.py) opens a span that lasts until the job's next wait event,
start, or the end of the log; the spans, grouped by reason (numbers aside), say where the waiting
time went. Reservations, backfill, preemptions and failures are listed in time order.

A job waits in the queue from its submission to its first start and again from each eviction
(``preempt``; ``failed``, whose interval includes detection and teardown) to its next start:
``waited_s`` is the sum of those intervals (a job
that started at once and was then evicted for 48 minutes waited 48 minutes, not 0 s), and
``waited_before_first_start_s`` the first of them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gpufleet.model.errors import InputError

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
#: Events about a job that are worth telling besides its waits.
#: Events after which a started job is back in the queue.
REQUEUE = ("preempt", "failed")
NOTABLE = ("reserve", "backfill", "preempt-notice", "preempt", "failed", "restart", "finish", "start")


@dataclass
class WaitSpan:
    start: float
    end: float
    reason: str

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class JobStory:
    policy: str
    job: str
    submitted: float
    first_start: float | None
    finished: float | None
    #: Every interval the job was queued: submit → first start, each eviction → next start.
    waited_s: float
    #: Still pending when the log ends (waited_s then runs to the log's last event).
    never_started: bool
    spans: list[WaitSpan] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    waited_before_first_start_s: float = 0.0
    #: Evictions (preemptions, failures) that sent it back to the queue.
    requeues: int = 0

    def by_reason(self) -> list[tuple[str, float]]:
        """Waiting seconds per reason (numbers in the text masked), largest first."""
        acc: dict[str, tuple[float, str]] = {}
        for s in self.spans:
            key = _NUMBER.sub("#", s.reason)
            total, _ = acc.get(key, (0.0, s.reason))
            acc[key] = (total + s.seconds, s.reason)  # show the latest wording
        return sorted(((text, total) for total, text in acc.values()), key=lambda x: -x[1])

    def as_dict(self) -> dict:
        d = asdict(self)
        d["by_reason"] = [{"reason": r, "seconds": s} for r, s in self.by_reason()]
        return d


def read_log(path: Path) -> list[dict]:
    """The events of one log; a malformed line is an InputError naming the file and line."""
    out: list[dict] = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(str(path), "", f"not a UTF-8 event log ({e.reason})") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            raise InputError(f"{path}:{n}", "",
                             "not a JSON event (expected {t, event, job, detail})") from None
        if not isinstance(ev, dict) or not {"t", "event", "job"} <= ev.keys() \
                or not isinstance(ev["t"], int | float) or not math.isfinite(ev["t"]):
            raise InputError(f"{path}:{n}", "", "expected an object with a finite 't', 'event' and 'job'")
        out.append(ev)
    return out


def run_logs(run: Path) -> dict[str, Path]:
    """Policy name -> event log of a run directory written by `gpufleet simulate --out`."""
    if not run.is_dir():
        raise InputError(str(run), "--run", "not a directory (expected the --out directory of "
                         "`gpufleet simulate`)")
    logs = {p.name[len("events-"):-len(".jsonl")]: p for p in sorted(run.glob("events-*.jsonl"))}
    if not logs:
        raise InputError(str(run), "--run", "no events-<policy>.jsonl files (expected the --out "
                         "directory of `gpufleet simulate`)")
    return logs


def story(policy: str, events: list[dict], job: str) -> JobStory | None:
    """The job's story in one policy's log; None when the log never mentions it."""
    mine = [e for e in events if e["job"] == job]
    if not mine:
        return None
    end_of_log = events[-1]["t"] if events else 0.0
    submitted = next((e["t"] for e in mine if e["event"] == "submit"), mine[0]["t"])
    first_start = next((e["t"] for e in mine if e["event"] == "start"), None)
    finished = next((e["t"] for e in reversed(mine) if e["event"] == "finish"), None)
    spans: list[WaitSpan] = []
    open_span: WaitSpan | None = None
    for e in mine:
        kind = e["event"]
        if open_span is not None and kind in ("wait", "start"):
            open_span.end = e["t"]
            spans.append(open_span)
            open_span = None
        if kind == "wait":
            open_span = WaitSpan(e["t"], e["t"], e.get("detail", ""))
    if open_span is not None:
        open_span.end = end_of_log
        spans.append(open_span)
    queued_since: float | None = submitted
    waited, requeues = 0.0, 0
    for e in mine:
        if e["event"] == "start" and queued_since is not None:
            waited += e["t"] - queued_since
            queued_since = None
        elif e["event"] in REQUEUE and queued_since is None:
            queued_since, requeues = e["t"], requeues + 1
    if queued_since is not None:
        waited += end_of_log - queued_since
    first_wait = (first_start if first_start is not None else end_of_log) - submitted
    return JobStory(policy, job, submitted, first_start, finished, waited, first_start is None,
                    [s for s in spans if s.seconds > 0],
                    [e for e in mine if e["event"] in NOTABLE], first_wait, requeues)
