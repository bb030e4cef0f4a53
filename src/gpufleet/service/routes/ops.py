"""Audit log, decision stream (SSE) and metrics."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel

from gpufleet.service.finished import evictions, finished_jobs
from gpufleet.service.routes.deps import Admin, Caller, Svc, check_caller

router = APIRouter(tags=["ops"])


class AuditEntry(BaseModel):
    id: int
    at: float
    actor: str
    role: str
    action: str
    target: str
    outcome: str
    detail: str
    before: Any = None
    after: Any = None


class AuditPage(BaseModel):
    entries: list[AuditEntry]
    next: int | None


@router.get("/audit")
def audit(svc: Svc, who: Admin, after: Annotated[int | None, Query(ge=0, le=2**62)] = None,
          limit: Annotated[int, Query(ge=1, le=1000)] = 100,
          actor: Annotated[str | None, Query(max_length=64)] = None) -> AuditPage:
    rows = svc.store.audit_log(after=after, limit=limit + 1, actor=actor)
    more = len(rows) > limit
    rows = rows[:limit]
    return AuditPage(entries=[AuditEntry(**r) for r in rows], next=rows[-1]["id"] if more else None)


@router.get("/events", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}}}})
async def events(request: Request, svc: Svc, who: Caller,
                 last_event_id: Annotated[str | None, Header(max_length=32)] = None,
                 once: Annotated[bool, Query(description="send what is buffered and end")] = False
                 ) -> StreamingResponse:
    """Server-sent events: one ``event: <kind>`` per decision (start, finish, preempt, …), ``id``
    numbered; reconnect with ``Last-Event-ID`` to resume."""
    seq = int(last_event_id) if last_event_id and last_event_id.isdigit() else svc.events.last
    if once and not last_event_id:
        seq = 0

    async def stream():  # noqa: ANN202
        nonlocal seq
        yield ": gpufleet decisions\n\n"
        while True:
            batch, missed = svc.events.after(seq)
            if missed:
                yield f"event: missed\ndata: {json.dumps({'missed': missed})}\n\n"
            for n, ev in batch:
                seq = n
                yield f"id: {n}\nevent: {ev['kind']}\ndata: {json.dumps(ev)}\n\n"
            if once or await request.is_disconnected():
                return
            await asyncio.sleep(0.5)

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache"})


metrics_router = APIRouter(tags=["ops"])


@metrics_router.get("/metrics", response_class=Response)
def metrics(request: Request, svc: Svc) -> Response:
    if not svc.config.metrics_public and svc.auth.cached(request.headers.get("authorization")) is None:
        check_caller(request)
    return Response(svc.metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")


class TenantHistory(BaseModel):
    tenant: str
    finished: int
    #: Source seconds from submission to start, and from submission to end (JCT), over the
    #: finished jobs (None when none finished).
    wait_mean_s: float | None
    wait_p50_s: float | None
    wait_p90_s: float | None
    jct_mean_s: float | None
    gpu_hours: float
    #: Evictions of the tenant's jobs: by the scheduler (preemption) and after a node failed
    #: (requeue), and the GPU-hours of work they lost (run since the job's last checkpoint).
    preemptions: int = 0
    requeues: int = 0
    lost_gpu_hours: float = 0.0


@router.get("/history")
def history(svc: Svc, who: Caller,
            since: Annotated[float, Query(ge=0, le=1e12, allow_inf_nan=False)] = 0.0) -> list[TenantHistory]:
    """Per tenant: the jobs finished since ``since`` (source time) with their waits, JCT and
    GPU-hours (over Slurm every job its accounting lists, sbatch'ed ones too); and, over the
    jobs submitted since then, the preemptions, node-failure requeues and the work they lost
    (what the loop's decisions cost: recorded by the leader as each eviction completes; over
    Slurm also each job its accounting lists as PREEMPTED)."""
    by: dict[str, list] = {}
    for r in finished_jobs(svc, since):
        by.setdefault(r.tenant, []).append(r)
    lost = evictions(svc, since)
    out = []
    for tenant in sorted(set(by) | set(lost)):
        rows = by.get(tenant, [])
        # at least 0: Slurm's start is in whole seconds, the service's submit stamp is not
        waits = sorted(max(0.0, r.start_time - r.submit_time) for r in rows)
        pre, req, gpu_s = lost.get(tenant, (0, 0, 0.0))
        out.append(TenantHistory(
            tenant=tenant, finished=len(rows),
            wait_mean_s=sum(waits) / len(waits) if waits else None,
            wait_p50_s=waits[len(waits) // 2] if waits else None,
            wait_p90_s=waits[min(len(waits) - 1, int(0.9 * len(waits)))] if waits else None,
            jct_mean_s=sum(r.end_time - r.submit_time for r in rows) / len(rows) if rows else None,
            gpu_hours=sum(r.gpus * (r.end_time - r.start_time) for r in rows) / 3600.0,
            preemptions=pre, requeues=req, lost_gpu_hours=gpu_s / 3600.0))
    return out
