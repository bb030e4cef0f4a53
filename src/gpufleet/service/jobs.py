"""A submitted job: a job of the trace format (``gpufleet schema trace``), ``submit_time``
optional (the service stamps it) and ``id`` optional (the service mints one), so a trace line can
be posted as it is.

The service's clock stamps ``submit_time``: a posted one (in the past or the future) is ignored,
so a client cannot jump the queue by back-dating its job or park one that never arrives.

Names that reach the store, the logs and the metrics (job id, tenant, pod set names, GPU models)
are held to a plain alphabet: letters, digits and ``. _ - :``, starting with a letter or digit.
A path- or SQL-shaped string is refused with its field, never stored.
"""

from __future__ import annotations

import secrets
from typing import Any

from pydantic import ConfigDict, Field, ValidationError

from gpufleet.model.catalog import canonical_gpu_name
from gpufleet.model.job import Job
from gpufleet.traces.jsonl import MAX_SECONDS, TraceRow

#: A name the store, URLs and metric labels can carry as it is.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"


class JobSubmission(TraceRow):
    """The body of ``POST /api/v1/jobs``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    id: str | None = Field(default=None, pattern=NAME_PATTERN)  # type: ignore[assignment]
    tenant: str = Field(default="default", pattern=NAME_PATTERN)
    submit_time: float | None = Field(default=None, ge=0, le=MAX_SECONDS, strict=True)  # type: ignore[assignment]
    priority: int = Field(default=0, ge=-(10**9), le=10**9, strict=True)
    labels: dict[str, str] = Field(default_factory=dict, max_length=64)


class BadSubmission(ValueError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field, self.reason = field, reason


def check_names(sub: JobSubmission) -> None:
    import re
    pat = re.compile(NAME_PATTERN)
    for i, ps in enumerate(sub.pod_sets):
        if not pat.match(ps.name):
            raise BadSubmission(f"pod_sets.{i}.name", "letters, digits and . _ - : only")
        for k, m in enumerate(ps.gpu_models):
            try:
                canonical_gpu_name(m)
            except ValueError as e:
                raise BadSubmission(f"pod_sets.{i}.gpu_models.{k}", str(e)) from None
    for k, v in sub.labels.items():
        if len(k) > 256 or len(v) > 1024:
            raise BadSubmission(f"labels.{k[:40]}", "keys up to 256 and values up to 1024 characters")


def new_job_id() -> str:
    return "j-" + secrets.token_hex(8)


def parse_submission(body: Any) -> JobSubmission:
    """The validated body; ``BadSubmission`` with the first failing field otherwise."""
    if not isinstance(body, dict):
        raise BadSubmission("body", "expected a JSON object (one job of the trace format)")
    try:
        sub = JobSubmission.model_validate(body)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err.get("loc", ())) or "body"
        raise BadSubmission(field, str(err.get("msg", "invalid"))) from None
    check_names(sub)
    return sub


def build_job(sub: JobSubmission, job_id: str, submit_time: float) -> Job:
    row = sub.model_copy(update={"id": job_id, "submit_time": submit_time})
    return TraceRow.build(row)


def stored_body(sub: JobSubmission, job_id: str, submit_time: float) -> dict[str, Any]:
    """The trace row the store keeps (and a restart rebuilds the job from)."""
    d = sub.model_dump(mode="json", exclude_none=True)
    d["id"], d["submit_time"] = job_id, submit_time
    d.pop("slurm", None)
    return d


def job_from_body(body: dict[str, Any]) -> Job:
    return TraceRow.model_validate(body).build()
