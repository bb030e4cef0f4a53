"""Read routes over the live state: summary, nodes, queues, live jobs, explain."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path

from gpufleet.live import views
from gpufleet.live.explain import Explanation, explain
from gpufleet.service.errors import ApiError
from gpufleet.service.routes.deps import service
from gpufleet.service.runtime import Service

router = APIRouter(tags=["fleet"])
Name = Annotated[str, Path(min_length=1, max_length=256)]


@router.get("/summary")
def summary(svc: Service = Depends(service)) -> views.FleetSummary:
    return views.fleet_summary(svc.snapshot())


@router.get("/nodes")
def nodes(svc: Service = Depends(service)) -> list[views.NodeView]:
    return views.nodes(svc.snapshot())


@router.get("/nodes/{name}")
def node(name: Name, svc: Service = Depends(service)) -> views.NodeView:
    v = views.node(svc.snapshot(), name)
    if v is None:
        raise ApiError(404, f"no node {name!r}", "name")
    return v


@router.get("/queues")
def queues(svc: Service = Depends(service)) -> list[views.QueueView]:
    return views.queues(svc.snapshot())


@router.get("/jobs/{job_id}/explain")
def job_explain(job_id: Name, svc: Service = Depends(service)) -> Explanation:
    e = explain(svc.snapshot(), job_id)
    if e is None:
        raise ApiError(404, f"job {job_id!r} is not pending or running", "job_id")
    return e
