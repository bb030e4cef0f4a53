"""The jobs Slurm finished, from its accounting: what History shows over ``--source slurm``.

``sacct -X -a -P -S <since> -E now -o JobID,Account,Submit,Start,End,State,AllocTRES`` (slurmdbd;
job allocations only, steps left out; times in the local time zone, as sacct prints them). One
``FinishedRun`` per job that started and ended: its account (the tenant), its GPUs (AllocTRES
``gres/gpu``), submit, start and end in epoch seconds, and its final state. Cancelled jobs are
left out, as the service's own store leaves them out of History; a job ``PREEMPTED`` is counted
as its account's preemption. Every job is there, whether it came through our API or ``sbatch``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from gpufleet.adapters.slurm.reader import Runner
from gpufleet.adapters.slurm.tenancy_import import parse_table
from gpufleet.traces.slurm_sacct import parse_tres, tres_count

SACCT_FORMAT = "JobID,Account,Submit,Start,End,State,AllocTRES"
NOT_A_TIME = {"", "unknown", "none", "n/a"}


@dataclass(frozen=True, slots=True)
class FinishedRun:
    id: str
    tenant: str
    gpus: int
    submit_time: float
    start_time: float
    end_time: float
    state: str

    @property
    def preempted(self) -> bool:
        return self.state.startswith("PREEMPTED")


def _epoch(text: str) -> float | None:
    text = text.strip()
    if text.lower() in NOT_A_TIME:
        return None
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


def parse_runs(text: str, source: str = "sacct") -> tuple[FinishedRun, ...]:
    """``sacct -X -P -o JobID,Account,Submit,Start,End,State,AllocTRES`` (header line kept)."""
    out = []
    for r in parse_table(text, source, tuple(SACCT_FORMAT.split(","))):
        state = r["State"].strip()
        start, end, submit = _epoch(r["Start"]), _epoch(r["End"]), _epoch(r["Submit"])
        if start is None or end is None or submit is None:
            continue  # never started, or still running
        if state.startswith("CANCELLED") or "." in r["JobID"]:
            continue
        gpus = tres_count(parse_tres(r["AllocTRES"]), "gres/gpu", source, f"JobID={r['JobID']}: AllocTRES")
        out.append(FinishedRun(r["JobID"].strip(), r["Account"].strip() or "default", gpus, submit,
                               start, end, state))
    return tuple(out)


def read_runs(run: Runner, since: float) -> tuple[FinishedRun, ...]:
    """The jobs that ended at or after ``since`` (epoch seconds), read with ``sacct``."""
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since))
    text = run(["sacct", "-X", "-a", "-P", "-S", start, "-E", "now", "-o", SACCT_FORMAT])
    return tuple(r for r in parse_runs(text) if r.end_time >= since)
