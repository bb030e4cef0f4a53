"""A workload trace from ``sacct --parsable2`` output: one gpufleet Job per Slurm job that ran.

Mapping: Account -> tenant; TimelimitRaw (minutes) -> run_time_estimate; Elapsed -> run_time;
Submit -> submit_time, in seconds after the earliest Submit in the file (``origin``); AllocTRES
(ReqTRES for a job that never got an allocation) -> the request, one pod per node, split evenly
(a remainder becomes a second pod set with one more GPU per pod): what the job held on its nodes.
What it *asked* for (ReqTRES ``cpu``, ``node``) is kept in the labels ``slurm.req_cpus`` and
``slurm.req_nodes``, because Slurm's job-size priority counts requested CPUs (a 1-GPU job asking
for 1 CPU is allocated 8 under DefCpuPerGPU=8). Counts must be whole and non-negative and End not
before Start; otherwise the row is one error naming the line and field. Job steps (``123.batch``,
``123.0``) repeat their job's resources and are skipped and counted. Jobs that never started,
and jobs still running, cannot give a run time: they are listed in ``not_started`` and
``unfinished`` rather than dropped silently. What Slurm did with each job (start, end, state)
stays in ``records``, aligned with ``jobs``, for comparisons with a simulated schedule.

A job-level row can also be a *placeholder*: slurmctld sends slurmdbd the batch step's start and
the job's completion on their own, and when one of those arrives before the job's own record,
slurmdbd creates the row from it alone — JobName ``allocation``, QOS ``Unknown``, Priority 0, an
empty ReqTRES and an empty TimelimitRaw (a real job's limit is at least 1 minute or
``UNLIMITED``) — and fills it in when the job record follows, typically within a second (seen on
the emulated 22.05 cluster with three 1-2 s jobs: about one run in fifteen). Such a row is listed
in ``unfinished`` ("accounting record incomplete") instead of becoming a job with no time limit,
priority or name: poll again, as for a job still running.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gpufleet.model.catalog import UnknownGpuModel, canonical_gpu_name
from gpufleet.model.errors import InputError
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.traces.sacct_csv import is_trace_csv, read_csv_rows

REQUIRED = ("JobID", "Submit", "State")
NOT_A_TIME = {"", "unknown", "none", "n/a"}
DEFAULT_TENANT = "default"
_MEM_SCALE = {"K": 1 / 1024**2, "M": 1 / 1024, "G": 1.0, "T": 1024.0, "P": 1024.0**2}


@dataclass(frozen=True, slots=True)
class SacctRecord:
    """What Slurm did with one job; times in seconds after the trace origin."""

    job_id: str
    name: str
    state: str
    submit: float
    start: float | None
    end: float | None
    node_list: str = ""

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.submit


@dataclass(frozen=True, slots=True)
class LeftOut:
    job_id: str
    state: str
    why: str


@dataclass(frozen=True, slots=True)
class SacctTrace:
    jobs: tuple[Job, ...]
    records: tuple[SacctRecord, ...]
    origin: datetime | None
    steps_skipped: int = 0
    not_started: tuple[LeftOut, ...] = ()
    unfinished: tuple[LeftOut, ...] = ()
    duplicates: int = 0

    def summary(self) -> str:
        return (f"{len(self.jobs)} jobs; skipped {self.steps_skipped} job steps, "
                f"{len(self.not_started)} never started, {len(self.unfinished)} still running"
                + (f", {self.duplicates} repeated ids (kept the last)" if self.duplicates else ""))


def parse_time(text: str) -> datetime | None:
    text = text.strip()
    if text.lower() in NOT_A_TIME:
        return None
    return datetime.fromisoformat(text)


def parse_duration(text: str) -> float | None:
    """Slurm durations: ``[D-]HH:MM:SS``, ``MM:SS``, ``MM:SS.mmm``; None for UNLIMITED and the like."""
    text = text.strip()
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)", text)
    if not m:
        return None
    days, hours, minutes, seconds = m.groups()
    return int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)


def parse_tres(text: str) -> dict[str, str]:
    """``cpu=8,gres/gpu=1,gres/gpu:h100=1,mem=62.50G,node=1`` -> {key: value}."""
    out: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def memory_gb(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)([KMGTP]?)", text.strip(), re.IGNORECASE)
    if not m:
        return 0.0
    return float(m.group(1)) * _MEM_SCALE.get(m.group(2).upper() or "M", 1.0)


def _gpu_models(tres: dict[str, str]) -> tuple[str, ...]:
    models: list[str] = []
    for key in tres:
        if key.startswith("gres/gpu:"):
            try:
                models.append(canonical_gpu_name(key.split(":", 1)[1]))
            except UnknownGpuModel:
                continue
    return tuple(sorted(set(models)))


def tres_count(tres: dict[str, str], key: str, source: str = "sacct", where: str = "TRES") -> int:
    """A whole, non-negative TRES count (``gres/gpu=4``, ``cpu=8``); 0 when absent."""
    text = (tres.get(key, "") or "0").strip()
    if not text.isdigit():
        raise InputError(source, f"{where}: {key}", f"expected a whole number ≥ 0, got {text!r}")
    return int(text)


def pod_sets_from_tres(tres: dict[str, str], nodes: int, source: str = "sacct",
                       where: str = "AllocTRES") -> tuple[PodSet, ...]:
    """One pod per node; GPUs, CPUs and memory split evenly over the nodes."""
    nodes = max(nodes, 1)
    gpus = tres_count(tres, "gres/gpu", source, where)
    cpus = tres_count(tres, "cpu", source, where) / nodes
    mem_text = tres.get("mem", "0")
    if not re.fullmatch(r"\d+(\.\d+)?[KMGTP]?", mem_text.strip(), re.IGNORECASE):
        raise InputError(source, f"{where}: mem", f"expected a size such as 62.50G, got {mem_text!r}")
    mem = memory_gb(mem_text) / nodes
    models = _gpu_models(tres)
    base, extra = divmod(gpus, nodes)
    sets = []
    if extra:
        sets.append(PodSet("main-plus1", extra, PodRequest(base + 1, cpus, mem, models)))
    if nodes - extra:
        sets.append(PodSet("main", nodes - extra, PodRequest(base, cpus, mem, models)))
    return tuple(sets)


def _rows(text: str, source: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    lines = [(no, line) for no, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise InputError(source, "", "empty file (expected sacct --parsable2 output with a header line)")
    header = lines[0][1].split("|")
    missing = [f for f in REQUIRED if f not in header]
    if missing:
        raise InputError(source, "header", f"missing column {missing[0]} (expected sacct --parsable2 "
                         "with at least JobID, Submit, State and AllocTRES or ReqTRES)")
    if "AllocTRES" not in header and "ReqTRES" not in header:
        raise InputError(source, "header", "missing column AllocTRES or ReqTRES")
    return header, [(no, line.split("|")) for no, line in lines[1:]]


def parse_sacct(text: str, source: str = "sacct") -> SacctTrace:
    header, rows = _rows(text, source)
    parsed: dict[str, tuple[int, dict[str, str]]] = {}
    steps = duplicates = 0
    for no, cells in rows:
        if len(cells) != len(header):
            raise InputError(source, f"line {no}", f"expected {len(header)} '|'-separated fields, "
                             f"got {len(cells)}")
        row = dict(zip(header, cells, strict=True))
        if "." in row["JobID"]:
            steps += 1
            continue
        if row["JobID"] in parsed:
            duplicates += 1
        parsed[row["JobID"]] = (no, row)
    submits: list[datetime] = []
    for no, row in parsed.values():
        submit = _time(row, "Submit", source, no)
        if submit is None:
            raise InputError(source, f"line {no}: Submit", f"expected a time, got {row['Submit']!r}")
        submits.append(submit)
    origin = min(submits) if submits else None
    jobs: list[Job] = []
    records: list[SacctRecord] = []
    not_started: list[LeftOut] = []
    unfinished: list[LeftOut] = []
    for no, row in parsed.values():
        state = row["State"].split(" ")[0]
        start = _time(row, "Start", source, no)
        end = _time(row, "End", source, no)
        if state in WAITING_AGAIN:
            # a requeued job (node failure, scontrol requeue) shows its latest record: pending again
            unfinished.append(LeftOut(row["JobID"], state, "pending (again, if it was requeued after a node "
                                      "failure): no run time yet; sacct -D lists its earlier runs"))
            continue
        if start is None or _never_started(row, start):
            why = "cancelled before it started" if state == "CANCELLED" else "never started"
            not_started.append(LeftOut(row["JobID"], state, why))
            continue
        if end is None or state in ("RUNNING", "PENDING", "SUSPENDED", "REQUEUED", "RESIZING"):
            unfinished.append(LeftOut(row["JobID"], state, "still running: no run time yet"))
            continue
        if _placeholder(row):
            unfinished.append(LeftOut(row["JobID"], state, INCOMPLETE))
            continue
        assert origin is not None
        job, record = _job(row, state, origin, start, end, source, no)
        jobs.append(job)
        records.append(record)
    return SacctTrace(tuple(jobs), tuple(records), origin, steps, tuple(not_started), tuple(unfinished),
                      duplicates)


WAITING_AGAIN = ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED")
INCOMPLETE = "accounting record incomplete: slurmdbd has not merged the job's own record yet"


def _placeholder(row: dict[str, str]) -> bool:
    """slurmdbd's stand-in row (see the module docstring): it has no time limit and no request.

    Only the columns present can tell: TimelimitRaw empty (never so for a real job), or, without
    that column, ReqTRES empty on a row named ``allocation``.
    """
    if "TimelimitRaw" in row:
        return not row["TimelimitRaw"].strip()
    return "ReqTRES" in row and not row["ReqTRES"].strip() and row.get("JobName") == "allocation"


def _never_started(row: dict[str, str], start: datetime | None) -> bool:
    """No start time, or no allocation: Slurm 22.05 gives a job cancelled at once while pending
    Start = End = the cancel time, with NodeList ``None assigned`` and an empty AllocTRES."""
    if start is None:
        return True
    if "NodeList" in row:
        return row["NodeList"].strip() in ("", "None assigned", "(null)")
    return "AllocTRES" in row and not row["AllocTRES"].strip() and not parse_duration(row.get("Elapsed", ""))


def _time(row: dict[str, str], field: str, source: str, no: int) -> datetime | None:
    try:
        return parse_time(row.get(field, ""))
    except ValueError:
        raise InputError(source, f"line {no}: {field}", f"expected an ISO time, got {row[field]!r}") from None


#: TimelimitRaw values that mean "no limit of the job's own" (sacct prints these, not minutes)
_NO_LIMIT = frozenset({"UNLIMITED", "PARTITION_LIMIT", "INFINITE", "NONE"})


def _seconds_after(t: datetime, origin: datetime) -> float:
    return (t - origin).total_seconds()


def _job(row: dict[str, str], state: str, origin: datetime, start: datetime, end: datetime,
         source: str, no: int) -> tuple[Job, SacctRecord]:
    alloc = parse_tres(row.get("AllocTRES", ""))
    requested = parse_tres(row.get("ReqTRES", ""))
    tres, tres_field = (alloc, "AllocTRES") if alloc else (requested, "ReqTRES")
    nodes_text = row.get("NNodes", "") or tres.get("node", "1")
    if not nodes_text.isdigit() or int(nodes_text) < 1:
        raise InputError(source, f"line {no}: NNodes", f"expected a whole number ≥ 1, got {nodes_text!r}")
    if end < start:
        raise InputError(source, f"line {no}: End", f"expected End ≥ Start ({start.isoformat()}), "
                         f"got {end.isoformat()}")
    elapsed_text = row.get("Elapsed", "").strip()
    elapsed = parse_duration(elapsed_text)
    if elapsed is None:
        if elapsed_text:
            raise InputError(source, f"line {no}: Elapsed", f"expected [D-]HH:MM:SS, got {elapsed_text!r}")
        elapsed = _seconds_after(end, start)
    limit = row.get("TimelimitRaw", "").strip()
    if limit and not limit.isdigit() and limit.upper() not in _NO_LIMIT:
        raise InputError(source, f"line {no}: TimelimitRaw",
                         f"expected whole minutes or UNLIMITED, got {limit!r}")
    estimate = float(limit) * 60 if limit.isdigit() else parse_duration(row.get("Timelimit", ""))
    priority = row.get("Priority", "").strip()
    if priority and not priority.isdigit():
        raise InputError(source, f"line {no}: Priority", f"expected a whole number ≥ 0, got {priority!r}")
    submit = _seconds_after(_time(row, "Submit", source, no) or origin, origin)
    # Job-size priority counts what the job asked for (ReqTRES), not what DefCpuPerGPU gave it
    where = f"line {no}: ReqTRES"
    req_cpus = str(tres_count(requested, "cpu", source, where)) if "cpu" in requested else ""
    req_nodes = str(tres_count(requested, "node", source, where)) if "node" in requested else ""
    labels = tuple((k, v) for k, v in (("slurm.job_id", row["JobID"]), ("slurm.name", row.get("JobName", "")),
                                       ("slurm.qos", row.get("QOS", "")), ("slurm.state", state),
                                       ("slurm.partition", row.get("Partition", "")),
                                       ("slurm.req_cpus", req_cpus), ("slurm.req_nodes", req_nodes)) if v)
    job = Job(
        id=JobId(row["JobID"]),
        tenant=TenantId(row.get("Account", "") or DEFAULT_TENANT),
        pod_sets=pod_sets_from_tres(tres, int(nodes_text), source, f"line {no}: {tres_field}"),
        submit_time=submit,
        run_time=elapsed,
        priority=int(priority) if priority.isdigit() else 0,
        run_time_estimate=estimate,
        labels=labels,
    )
    record = SacctRecord(row["JobID"], row.get("JobName", ""), state, submit,
                         _seconds_after(start, origin), _seconds_after(end, origin), row.get("NodeList", ""))
    return job, record


def read_sacct(path: str | Path) -> SacctTrace:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise InputError(str(path), "", f"cannot read file ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise InputError(str(path), f"byte {e.start}", "expected sacct's text output, got binary data") \
            from None
    return parse_sacct(text, str(path))


def job_to_dict(job: Job, record: SacctRecord | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": job.id, "tenant": job.tenant, "submit_time": job.submit_time, "run_time": job.run_time,
        "run_time_estimate": job.run_time_estimate, "priority": job.priority, "kind": str(job.kind),
        "pod_sets": [{"name": ps.name, "replicas": ps.replicas, "gpus": ps.request.gpus,
                      "cpus": ps.request.cpus, "memory_gb": ps.request.memory_gb,
                      "gpu_models": list(ps.request.gpu_models)} for ps in job.pod_sets],
        "labels": dict(job.labels),
    }
    if record is not None:
        out["slurm"] = {"state": record.state, "start": record.start, "end": record.end,
                        "node_list": record.node_list}
    return out


def write_jsonl(trace: SacctTrace, path: str | Path) -> None:
    lines = [json.dumps(job_to_dict(j, r), sort_keys=True) for j, r in zip(trace.jobs, trace.records,
                                                                           strict=True)]
    Path(path).write_text("".join(line + "\n" for line in lines))


@dataclass(frozen=True, slots=True)
class ActualRun:
    """What Slurm did with one job of a trace, in the trace's own seconds."""

    submit: float
    start: float
    end: float | None
    state: str


def _rows_with_records(path: Path, text: str) -> Iterator[Any]:
    if is_trace_csv(text):
        try:
            yield from (row for _, row in read_csv_rows(path, text))
        except InputError:
            return  # the trace reader reports it
        return
    for line in text.splitlines():
        try:
            yield json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue


def read_actual(path: str | Path) -> dict[str, ActualRun]:
    """The ``slurm`` records ``import-sacct`` writes into a JSONL trace (empty for other traces).

    Lines that are not JSON objects are left to the trace reader, which reports them.
    """
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return {}
    out: dict[str, ActualRun] = {}
    for row in _rows_with_records(Path(path), text):
        rec = row.get("slurm") if isinstance(row, dict) else None
        if not isinstance(rec, dict) or not isinstance(rec.get("start"), int | float):
            continue
        end = rec.get("end")
        out[str(row.get("id"))] = ActualRun(float(row.get("submit_time", 0.0)), float(rec["start"]),
                                            float(end) if isinstance(end, int | float) else None,
                                            str(rec.get("state", "")))
    return out
