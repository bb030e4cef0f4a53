"""The Studies page: a form per study (study_kinds.py), each run as a background job
(studies.py) whose card the page polls for progress and then shows the result in."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from gpufleet.live.snapshot import LiveSnapshot
from gpufleet.model.job import Job
from gpufleet.policies.fgd import POLICIES as PACKING
from gpufleet.policies.registry import PROFILES
from gpufleet.service.auth import Principal
from gpufleet.service.dashboard import study_kinds
from gpufleet.service.errors import ApiError

if TYPE_CHECKING:
    from gpufleet.service.dashboard.pages import Dashboard

Guard = Callable[["Dashboard", Request], "Principal | Response"]
Form = Callable[..., Awaitable[dict[str, str]]]


def add_routes(r: APIRouter, d: Dashboard, guard: Guard, guard_post: Guard, read_form: Form) -> None:
    @r.get("/studies", response_class=HTMLResponse)
    def studies_page(request: Request) -> Response:
        who = guard(d, request)
        if isinstance(who, Response):
            return who
        snap = d.svc.snapshot()
        return d.render(request, "studies.html", who, title="Studies", active="/studies",
                        policies=sorted(PROFILES), packers=sorted(PACKING), today=d.svc.config.profile_name,
                        recent=d.studies.recent(), nodes=len(snap.fleet.nodes), k=study_kinds)

    @r.post("/studies/{kind}", response_class=HTMLResponse)
    async def start_study(kind: str, request: Request) -> Response:
        who = guard_post(d, request)
        if isinstance(who, Response):
            return who
        form = await read_form(request)
        snap = d.svc.snapshot()
        try:
            history = _history(d, snap) if kind == "capacity" else None
            params = study_kinds.parse(kind, form, snap, d.svc.config.profile_name, history)
            study = d.studies.submit(params, snap, who.actor)
        except ApiError as e:
            return d.render(request, "study_card.html", who, e.status, study=None, error=e.message, kind=kind)
        return d.render(request, "study_card.html", who, study=study, error="", kind=kind)

    @r.get("/studies/{kind}/{study_id}", response_class=HTMLResponse)
    def study_card(kind: str, study_id: str, request: Request) -> Response:
        who = guard(d, request)
        if isinstance(who, Response):
            return who
        study = d.studies.get(study_id)
        if study is None:
            return d.render(request, "study_card.html", who, 404, study=None, kind=kind,
                            error=f"No study {study_id!r} (finished studies are kept until 20 newer ones).")
        return d.render(request, "study_card.html", who, study=study, error="", kind=kind)


def _history(d: Dashboard, snap: LiveSnapshot) -> tuple[list[Job], study_kinds.Runs]:
    """What this fleet has run: finished jobs (the store) start to end, running ones start to now."""
    done = [r for r in d.svc.store.history(0.0) if r.start_time is not None and r.end_time is not None]
    jobs = d.svc.jobs_of(done) + [rj.job for rj in snap.running.values()]
    runs = [(r.id, float(r.start_time or 0.0), float(r.end_time or 0.0)) for r in done]
    runs += [(jid, rj.start_time, snap.now) for jid, rj in snap.running.items()]
    return jobs, runs
