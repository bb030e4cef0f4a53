"""gpufleet's own trace format: one job per line, JSON.

    {"id": "17", "tenant": "prod", "submit_time": 0.0, "run_time": 3600.0,
     "run_time_estimate": 7200.0, "priority": 0, "kind": "training",
     "pod_sets": [{"name": "main", "replicas": 2, "gpus": 8, "cpus": 64, "memory_gb": 500,
                   "gpu_models": ["H100-80GB"]}], "labels": {"slurm.qos": "normal"},
     "eligible_nodes": ["gpu001", "gpu002"]}

``eligible_nodes`` (optional) is the per-job node filter: the job's pods go to those nodes only.

``gpufleet slurm import-sacct`` writes it (with an extra ``slurm`` record of what Slurm did, which
the reader ignores); ``gpufleet simulate --trace`` and scenario files (``workload: {trace: …}``)
read it. A bad line gets one error naming the file, the line and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpufleet.model.catalog import canonical_gpu_name
from gpufleet.model.errors import InputError, from_validation_error
from gpufleet.model.fleet_config import read_text
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, JobKind, PodRequest, PodSet
from gpufleet.traces.sacct_csv import is_trace_csv, read_csv_rows

#: Bounds on one row (typos, not jobs); the same as a scenario's (sim/scenario.py).
MAX_REPLICAS = 100_000
MAX_GPUS_PER_POD = 128
MAX_SECONDS = 10 * 365 * 86400.0


class _PodSetRow(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    name: str = "worker"
    replicas: int = Field(ge=1, le=MAX_REPLICAS, strict=True)
    gpus: int = Field(ge=0, le=MAX_GPUS_PER_POD, strict=True)
    cpus: float = Field(default=0.0, ge=0, le=1e6, strict=True)
    memory_gb: float = Field(default=0.0, ge=0, le=1e7, strict=True)
    gpu_models: list[str] = []


class TraceRow(BaseModel):
    """One line of the trace format (``gpufleet schema trace``): the model a trace file is read
    with, and the one ``POST /api/v1/jobs`` checks a body against (service/jobs.py), so that a
    trace line can be posted as it is."""

    #: NaN and ±Infinity (Python's json reads ``NaN``/``Infinity``) are rejected; numbers are
    #: strict, so ``"gpus": true`` is refused rather than read as 1.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    id: str
    tenant: str = "default"
    submit_time: float = Field(ge=0, le=MAX_SECONDS, strict=True)
    #: A job that failed at once ran 0 s: real data, kept.
    run_time: float = Field(ge=0, le=MAX_SECONDS, strict=True)
    run_time_estimate: float | None = Field(default=None, gt=0, le=MAX_SECONDS, strict=True)
    priority: int = Field(default=0, strict=True)
    kind: JobKind = JobKind.BATCH
    pod_sets: list[_PodSetRow] = Field(min_length=1)
    labels: dict[str, str] = {}
    #: The nodes (by name) the job may use; absent: every node (``Job.eligible_nodes``).
    eligible_nodes: list[str] | None = Field(default=None, min_length=1)
    slurm: dict[str, Any] | None = None

    def build(self) -> Job:
        sets = tuple(PodSet(p.name, p.replicas, PodRequest(
            p.gpus, p.cpus, p.memory_gb, tuple(canonical_gpu_name(m) for m in p.gpu_models)))
            for p in self.pod_sets)
        return Job(JobId(self.id), TenantId(self.tenant), sets, self.submit_time, self.run_time,
                   self.priority, self.kind, self.run_time_estimate,
                   labels=tuple(sorted(self.labels.items())),
                   eligible_nodes=None if self.eligible_nodes is None else frozenset(self.eligible_nodes))


def read_jobs(path: str | Path) -> list[Job]:
    """The jobs of a trace: gpufleet JSON lines, or the CSV that ``slurm import-sacct`` writes
    (recognised by its header, whatever the file is called)."""
    path = Path(path)
    text = read_text(path)
    jobs: list[Job] = []
    seen: set[str] = set()
    for where, row in (read_csv_rows(path, text) if is_trace_csv(text) else _json_rows(path, text)):
        try:
            job = TraceRow.model_validate(row).build()
        except ValidationError as e:
            raise from_validation_error(where, e) from None
        except ValueError as e:
            raise InputError(where, "pod_sets.gpu_models", str(e)) from None
        if job.id in seen:
            raise InputError(where, "id", f"duplicate job id {job.id!r}")
        seen.add(job.id)
        jobs.append(job)
    if not jobs:
        raise InputError(str(path), "", "no jobs: expected one JSON object per line (or import-sacct's CSV)")
    return jobs


def _json_rows(path: Path, text: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{no}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(where, "", f"not a JSON object ({e.msg})") from None
        except RecursionError:
            raise InputError(where, "", "not a JSON object (nested too deeply)") from None
        if not isinstance(row, dict):
            raise InputError(where, "", f"expected a JSON object (one job), got {type(row).__name__}")
        yield where, row


def job_row(job: Job) -> dict[str, Any]:
    row = {
        "id": job.id, "tenant": job.tenant, "submit_time": job.submit_time, "run_time": job.run_time,
        "run_time_estimate": job.run_time_estimate, "priority": job.priority, "kind": str(job.kind),
        "pod_sets": [{"name": ps.name, "replicas": ps.replicas, "gpus": ps.request.gpus,
                      "cpus": ps.request.cpus, "memory_gb": ps.request.memory_gb,
                      "gpu_models": list(ps.request.gpu_models)} for ps in job.pod_sets],
        "labels": dict(job.labels),
    }
    if job.eligible_nodes is not None:
        row["eligible_nodes"] = sorted(job.eligible_nodes)
    return row


def write_jobs(path: str | Path, jobs: Iterable[Job]) -> None:
    Path(path).write_text("".join(json.dumps(job_row(j), sort_keys=True, allow_nan=False) + "\n"
                                  for j in jobs))
