"""Audit log, decision stream (SSE) and metrics."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel

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
