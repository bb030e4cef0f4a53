"""``GET /healthz``: up, and whether the source of truth answers (no token needed).

Always 200 while the process serves: a source that went away (slurmrestd stopped, the API
server unreachable) is ``"status": "degraded"`` with ``source_reachable: false``, since when and
the last error; the service keeps answering from the last state it read.
"""

from __future__ import annotations

import os

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from gpufleet.service.routes.deps import service
from gpufleet.service.runtime import Service

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(svc: Service = Depends(service)) -> JSONResponse:
    """``role``: ``leader`` (runs the loop) or ``follower`` (serves the API, stores what it is
    asked; the leader applies it). ``pid``: the process that answered (under ``gpufleet serve``,
    the scheduler process: the front passes /healthz on to it)."""
    snap = svc.live()
    if snap is None:
        return JSONResponse({"status": "ok", "role": "follower", "source": svc.source.name,
                             "cycles": 0, "now": svc.loop.now(), "pid": os.getpid()}, 200)
    body = {"status": "ok" if snap.health.ok else "degraded", "role": "leader", "source": snap.source,
            "source_ok": snap.health.ok, "source_detail": snap.health.detail,
            "source_reachable": snap.health.ok, "source_since": snap.health.since,
            "source_last_error": snap.health.last_error,
            "cycles": snap.cycles, "now": snap.now, "pid": os.getpid()}
    return JSONResponse(body, 200)
