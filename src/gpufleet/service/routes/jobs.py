"""Jobs: submit (idempotent with an ``Idempotency-Key``), list with filters and a cursor, one
job, cancel, hold, release, priority. The store is the record; the live world adds the engine's
reason and estimate for a pending job."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Header, Path, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from gpufleet.live import views
from gpufleet.service.routes.deps import Caller, Svc
from gpufleet.service.runtime import Service
from gpufleet.service.store.db import JobRecord
from gpufleet.service.store.schema import JOB_STATES

router = APIRouter(tags=["jobs"])
JobId = Annotated[str, Path(min_length=1, max_length=256)]


class JobOut(BaseModel):
    id: str
    tenant: str
    state: str
    priority: int
    gpus: int
    submit_time: float
    start_time: float | None = None
    end_time: float | None = None
    submitted_by: str
    #: The trace row as stored (a restart rebuilds the job from it).
    body: dict[str, Any]
    #: For a pending job: the engine's reason category, status code, chain and estimate.
    reason: str | None = None
    status: str | None = None
    reasons: list[str] = []
    estimated_start: float | None = None
    nodes: list[str] = []


class JobPage(BaseModel):
    jobs: list[JobOut]
    #: Pass as ``after`` for the next page; None on the last page.
    next: str | None


class PriorityIn(BaseModel):
    priority: int = Field(ge=-(10**9), le=10**9)


def job_out(svc: Service, r: JobRecord) -> JobOut:
    out = JobOut(id=r.id, tenant=r.tenant, state=r.state, priority=r.priority, gpus=r.gpus,
                 submit_time=r.submit_time, start_time=r.start_time, end_time=r.end_time,
                 submitted_by=r.submitted_by, body=r.body)
    snap = svc.live() if r.state in ("pending", "running") else None
    if snap is not None:
        live = views.job_view(snap, r.id)
        if live is not None:
            out.reason, out.status, out.reasons = live.reason, live.status, live.reasons
            out.estimated_start, out.nodes = live.estimated_start, live.nodes
    elif r.state == "held":
        out.reason = "held"
    return out


@router.post("/jobs", status_code=201, response_model=JobOut,
             responses={200: {"description": "a retry: the job first submitted with this key"},
                        409: {"description": "the job id exists"},
                        422: {"description": "bad input: the field and the reason"}})
async def submit(svc: Svc, who: Caller, body: Annotated[dict[str, Any], Body(
        description="One job of the trace format (gpufleet schema trace); submit_time and id optional")],
        idempotency_key: Annotated[str | None, Header(max_length=256)] = None) -> JSONResponse:
    """(async: validation is CPU only, and the store's group commit is awaited, so a submission
    in flight holds no worker thread; a refusal's audit row, rare, is written inline)"""
    rec, created = await svc.submit_async(who, body, idempotency_key)
    return JSONResponse(job_out(svc, rec).model_dump(mode="json"), 201 if created else 200,
                        headers={"Location": f"/api/v1/jobs/{rec.id}"})


@router.get("/jobs")
def list_jobs(svc: Svc, who: Caller,
              tenant: Annotated[str | None, Query(max_length=256)] = None,
              state: Annotated[list[Literal[JOB_STATES]] | None, Query()] = None,  # type: ignore[valid-type]
              after: Annotated[str | None, Query(max_length=256)] = None,
              limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> JobPage:
    rows = svc.store.jobs(tenant=tenant, state=state, after=after, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    return JobPage(jobs=[job_out(svc, r) for r in rows], next=rows[-1].id if more else None)


@router.get("/jobs/{job_id}")
def get_job(job_id: JobId, svc: Svc, who: Caller) -> JobOut:
    return job_out(svc, svc.job_record(job_id))


@router.post("/jobs/{job_id}/cancel")
def cancel(job_id: JobId, svc: Svc, who: Caller) -> JobOut:
    return job_out(svc, svc.change_job(who, job_id, "cancel"))


@router.post("/jobs/{job_id}/hold")
def hold(job_id: JobId, svc: Svc, who: Caller) -> JobOut:
    return job_out(svc, svc.change_job(who, job_id, "hold"))


@router.post("/jobs/{job_id}/release")
def release(job_id: JobId, svc: Svc, who: Caller) -> JobOut:
    return job_out(svc, svc.change_job(who, job_id, "release"))


@router.post("/jobs/{job_id}/priority")
def priority(job_id: JobId, body: PriorityIn, svc: Svc, who: Caller) -> JobOut:
    return job_out(svc, svc.change_job(who, job_id, "priority", body.priority))
