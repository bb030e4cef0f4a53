"""The live fleet: summary, nodes (and their admin actions), queues (and quota edits), explain."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path
from pydantic import BaseModel, Field

from gpufleet.live import views
from gpufleet.live.explain import Explanation, explain
from gpufleet.model.tenancy import FlavorQuota
from gpufleet.service.errors import ApiError
from gpufleet.service.routes.deps import Caller, Svc

router = APIRouter(tags=["fleet"])
Name = Annotated[str, Path(min_length=1, max_length=256)]
MAX_GPUS = 10_000_000


class NodeAction(BaseModel):
    node: str
    state: str


class QuotaIn(BaseModel):
    nominal: int = Field(ge=0, le=MAX_GPUS)
    borrowing_limit: int | None = Field(default=None, ge=0, le=MAX_GPUS)
    lending_limit: int | None = Field(default=None, ge=0, le=MAX_GPUS)


@router.get("/summary")
def summary(svc: Svc, who: Caller) -> views.FleetSummary:
    return views.fleet_summary(svc.snapshot())


@router.get("/nodes")
def nodes(svc: Svc, who: Caller) -> list[views.NodeView]:
    return views.nodes(svc.snapshot())


@router.get("/nodes/{name}")
def node(name: Name, svc: Svc, who: Caller) -> views.NodeView:
    v = views.node(svc.snapshot(), name)
    if v is None:
        raise ApiError(404, f"no node {name!r}", "name")
    return v


@router.post("/nodes/{name}/{action}")
def node_action(name: Name, action: Literal["drain", "cordon", "uncordon", "fail"], svc: Svc,
                who: Caller) -> NodeAction:
    """drain / cordon: no new work (running jobs finish); uncordon: back in service; fail (the
    virtual fleet): the node breaks, its jobs requeue. Admin only."""
    return NodeAction(node=name, state=svc.change_node(who, name, action))


@router.get("/queues")
def queues(svc: Svc, who: Caller) -> list[views.QueueView]:
    return views.queues(svc.snapshot())


@router.put("/queues/{tenant}/quota/{flavor}")
def set_quota(tenant: Name, flavor: Name, body: QuotaIn, svc: Svc, who: Caller) -> QuotaIn:
    """Set a tenant queue's quota for one GPU flavor. Admin only."""
    svc.change_quota(who, tenant, flavor, FlavorQuota(body.nominal, body.borrowing_limit, body.lending_limit))
    return body


@router.get("/jobs/{job_id:path}/explain")
def job_explain(job_id: Name, svc: Svc, who: Caller) -> Explanation:
    e = explain(svc.snapshot(), job_id)
    if e is None:
        rec = svc.store.job(job_id)
        if rec is None:
            raise ApiError(404, f"no job {job_id!r}", "job_id")
        return Explanation(job=job_id, state=rec.state, summary=f"{rec.state}: not waiting in the fleet"
                           + (" (released by hand: POST …/release)" if rec.state == "held" else ""))
    return e
