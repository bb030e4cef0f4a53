"""The recorder: an event log (what happened, in order) and a timeline of fleet state.

The log is the simulator's ground truth: metrics are computed from it, determinism is tested on
it, and it is written out as JSON lines.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(slots=True)
class Recorder:
    log: list[tuple[float, str, str, str]] = field(default_factory=list)
    t: list[float] = field(default_factory=list)
    allocated: list[int] = field(default_factory=list)
    busy: list[int] = field(default_factory=list)
    queued: list[int] = field(default_factory=list)
    stranded_t: list[float] = field(default_factory=list)
    stranded: list[int] = field(default_factory=list)

    def event(self, time: float, kind: str, job: str, detail: str = "") -> None:
        self.log.append((time, kind, job, detail))

    def sample(self, time: float, allocated: int, busy: int, queued: int) -> None:
        if self.t and self.t[-1] == time:
            self.allocated[-1], self.busy[-1], self.queued[-1] = allocated, busy, queued
            return
        self.t.append(time)
        self.allocated.append(allocated)
        self.busy.append(busy)
        self.queued.append(queued)

    def sample_stranded(self, time: float, stranded: int) -> None:
        self.stranded_t.append(time)
        self.stranded.append(stranded)

    def write_log(self, path: Path) -> None:
        with path.open("w") as f:
            for time, kind, job, detail in self.log:
                f.write(json.dumps({"t": time, "event": kind, "job": job, "detail": detail}) + "\n")
