"""A node's health layers and its last diagnosis (service/node_health.py has the rules)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from gpufleet.service import node_health as nh
from gpufleet.service.errors import ApiError
from gpufleet.service.routes.deps import Caller, Svc

router = APIRouter(tags=["fleet"])
Name = Annotated[str, Path(min_length=1, max_length=256)]


def _known(svc: Svc, name: str) -> None:
    if name not in svc.snapshot().table.names:
        raise ApiError(404, f"no node {name!r}", "name")


@router.get("/nodes/{name}/health")
def node_health(name: Name, svc: Svc, who: Caller) -> nh.NodeHealthOut:
    """Driver → container toolkit → device plugin → allocatable, from the last diagnosis where there
    is one and from the source's state otherwise; the node's state on the health machine."""
    out = nh.node_health(svc.snapshot(), svc.store, name)
    if out is None:
        raise ApiError(404, f"no node {name!r}", "name")
    return out


@router.post("/nodes/{name}/diagnosis")
def attach_diagnosis(name: Name, body: nh.DiagnosisDoc, svc: Svc, who: Caller) -> nh.AttachedDiagnosis:
    """Attach ``gpufleet node diagnose BUNDLE -o json``'s output as the node's last diagnosis. Admin only."""
    _known(svc, name)
    return nh.attach(svc.store, who, name, body)


@router.post("/nodes/{name}/diagnosis/bundle")
def diagnose_bundle(name: Name, body: nh.BundleIn, svc: Svc, who: Caller) -> nh.AttachedDiagnosis:
    """Diagnose a node bundle's files here (``{"files": {"dmesg.txt": "…", …}}``, what ``gpufleet node
    collect`` writes) and attach the result. Admin only."""
    _known(svc, name)
    nh.require_admin(svc.store, who, name)   # before the work of a diagnosis
    return nh.attach(svc.store, who, name, nh.diagnose_files(body), how="bundle")
