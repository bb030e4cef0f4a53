"""The node page: capacity, health layers and the last diagnosis (service/node_health.py), the work
on the node, and the admin actions: drain / cordon / uncordon behind a confirmation, and attaching a
diagnosis (the pasted JSON of ``gpufleet node diagnose BUNDLE -o json``, or the bundle's files, which
the page reads in the browser and the service diagnoses with ops.diagnose).

Both actions are the service's own calls (``Service.change_node``, ``node_health.attach``), so the
admin-only rule and the audit are the API's.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError

from gpufleet.live import views
from gpufleet.service import node_health as nh
from gpufleet.service.auth import Principal
from gpufleet.service.errors import ApiError

if TYPE_CHECKING:
    from gpufleet.service.dashboard.pages import Dashboard

NODE_ACTIONS = ("drain", "cordon", "uncordon")
#: A bundle's files arrive urlencoded: up to 3 bytes per byte of text.
FORM_LIMIT = 3 * nh.MAX_BUNDLE_BYTES + 65_536
Guard = Callable[["Dashboard", Request], "Principal | Response"]
Form = Callable[..., Awaitable[dict[str, str]]]


def render(d: Dashboard, request: Request, who: Principal, name: str, *, error: str = "", done: str = "",
           status: int = 200) -> Response:
    snap = d.svc.snapshot()
    node = views.node(snap, name)
    if node is None:
        return d.render(request, "missing.html", who, 404, title="No such node", active="/nodes",
                        what=f"No node {name!r} in this fleet.")
    i = snap.table.names.index(name)
    planned = sorted(r.job for r in snap.reservations if i in r.nodes)
    health = nh.node_health(snap, d.svc.store, name)
    template = "node_panel.html" if request.headers.get("hx-request") else "node.html"
    return d.render(request, template, who, status, title=f"Node {name}", active="/nodes", node=node,
                    planned=planned, health=health, error=error, done=done)


def _diagnosis_of(form: dict[str, str]) -> tuple[nh.DiagnosisDoc, str]:
    """The posted result (``result``: the CLI's JSON) or the bundle (``bundle``: {name: text}),
    diagnosed here; ApiError (422) with one line naming what is wrong."""
    raw_bundle, raw_result = form.get("bundle", "").strip(), form.get("result", "").strip()
    if not raw_bundle and not raw_result:
        raise ApiError(422, "result: paste the output of `gpufleet node diagnose BUNDLE -o json`, "
                       "or choose the bundle's files", "result")
    field = "bundle" if raw_bundle else "result"
    try:
        doc = json.loads(raw_bundle or raw_result)
    except json.JSONDecodeError as e:
        raise ApiError(422, f"{field}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})",
                       field) from None
    try:
        if raw_bundle:
            return nh.diagnose_files(nh.BundleIn(files=doc)), "bundle"
        return nh.DiagnosisDoc.model_validate(doc), "posted"
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or field
        raise ApiError(422, f"{field}: {where}: {first['msg']}", field) from None


def add_routes(r: APIRouter, d: Dashboard, guard: Guard, guard_post: Guard, read_form: Form) -> None:
    @r.get("/nodes/{name}", response_class=HTMLResponse)
    def node_page(name: str, request: Request) -> Response:
        who = guard(d, request)
        if isinstance(who, Response):
            return who
        return render(d, request, who, name)

    @r.post("/nodes/{name}/diagnosis", response_class=HTMLResponse)
    async def node_diagnosis(name: str, request: Request) -> Response:
        who = guard_post(d, request)
        if isinstance(who, Response):
            return who
        if name not in d.svc.snapshot().table.names:
            return render(d, request, who, name)
        form = await read_form(request, limit=FORM_LIMIT)
        try:
            nh.require_admin(d.svc.store, who, name)   # refused and audited before any work
            doc, how = _diagnosis_of(form)
            att = nh.attach(d.svc.store, who, name, doc, how)
        except ApiError as e:
            return render(d, request, who, name, error=e.message, status=e.status)
        words = f"{att.diagnosis.layer.replace('_', ' ')}: {att.diagnosis.failure}"
        return render(d, request, who, name, done=f"{name}: diagnosis attached ({words}).")

    @r.post("/nodes/{name}/{action}", response_class=HTMLResponse)
    async def node_action(name: str, action: str, request: Request) -> Response:
        who = guard_post(d, request)
        if isinstance(who, Response):
            return who
        if action not in NODE_ACTIONS:
            return Response(f"Unknown action {action!r}.", status_code=404)
        try:
            state = d.svc.change_node(who, name, action)
        except ApiError as e:
            return render(d, request, who, name, error=e.message, status=e.status)
        return render(d, request, who, name, done=f"{name}: {action} done; the node is now {state}.")
