"""``GET /healthz``: up, and whether the source of truth answers (no token needed)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from gpufleet.service.routes.deps import service
from gpufleet.service.runtime import Service

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(svc: Service = Depends(service)) -> JSONResponse:
    snap = svc.snapshot()
    body = {"status": "ok" if snap.health.ok else "degraded", "source": snap.source,
            "source_ok": snap.health.ok, "source_detail": snap.health.detail,
            "cycles": snap.cycles, "now": snap.now}
    return JSONResponse(body, 200)
