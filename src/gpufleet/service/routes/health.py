"""``GET /healthz``: up, and whether the source of truth answers (no token needed)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from gpufleet.service.routes.deps import service
from gpufleet.service.runtime import Service

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(svc: Service = Depends(service)) -> JSONResponse:
    """``role``: ``leader`` (runs the loop) or ``follower`` (serves the API, stores what it is
    asked; the leader applies it)."""
    snap = svc.live()
    if snap is None:
        return JSONResponse({"status": "ok", "role": "follower", "source": svc.source.name,
                             "cycles": 0, "now": svc.loop.now()}, 200)
    body = {"status": "ok" if snap.health.ok else "degraded", "role": "leader", "source": snap.source,
            "source_ok": snap.health.ok, "source_detail": snap.health.detail,
            "cycles": snap.cycles, "now": snap.now}
    return JSONResponse(body, 200)
