"""The dashboard's routes: pages (full HTML), fragments (what htmx swaps in live) and actions.

Every page needs a signed-in browser (session.py); ``?token=`` on any page signs in and
redirects to the same page without it; a GET changes nothing else (signing out is a POST).
Actions are the service's own calls (``Service.change_node`` and friends), so the role checks and
the audit are the API's: a viewer who forges a drain from the page is refused and audited exactly
as over the API.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from gpufleet.live import views
from gpufleet.live.explain import explain
from gpufleet.policies.registry import PROFILES
from gpufleet.service.auth import Principal
from gpufleet.service.dashboard import (
    history,
    jobs_table,
    node_page,
    present,
    session,
    stream,
    studies,
    study_page,
    whatif_form,
)
from gpufleet.service.dashboard.cache import PerSnapshot
from gpufleet.service.dashboard.format import duration_words, plural, time_tag
from gpufleet.service.errors import ApiError
from gpufleet.service.runtime import Service

HERE = Path(__file__).parent
NAV = (("/", "Overview"), ("/queues", "Queues"), ("/jobs", "Jobs"), ("/nodes", "Nodes"),
       ("/history", "History"), ("/studies", "Studies"))
JOB_ACTIONS = ("hold", "release", "cancel")


class Dashboard:
    def __init__(self, svc: Service) -> None:
        self.svc = svc
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.globals.update(static=lambda p: f"/static/{p}", reason_words=present.REASON_WORDS,
                                          node_class=present.node_class, basis_words=present.BASIS_WORDS)
        self.templates.env.filters["plural"] = plural
        self.templates.env.globals["duration_words"] = duration_words
        self.templates.env.globals["wall_time"] = lambda t: time_tag(t, time.time())
        self.jobs = jobs_table.ColumnCache()
        self.derived = PerSnapshot()
        self.sampler = history.AllocationSampler(svc)
        self.notifier = stream.Notifier(svc.snapshot)
        self.studies = studies.Studies(lambda snap: whatif_form.today_profile(svc, snap))

    def render(self, request: Request, name: str, who: Principal | None, status: int = 200,
               **ctx: Any) -> HTMLResponse:
        snap = self.svc.snapshot()
        base = {"nav": NAV, "principal": who, "who_label": session.label(who) if who else "",
                # the stream resumes after the last decision this page was drawn with, so one made
                # between the render and the browser's connection is not missed
                "stream_url": f"/ui/events?after={self.svc.events.last}", "clock": present.Clock(snap),
                "snap": snap,
                "is_admin": who is not None and who.role == "admin"}
        return self.templates.TemplateResponse(request, name, {**base, **ctx}, status_code=status)


def _guard(d: Dashboard, request: Request) -> Principal | Response:
    """The signed-in principal, or the response that signs in (``?token=``) or asks to."""
    token = request.query_params.get("token")
    if token is not None:
        who = session.check_token(d.svc, token, request)
        if who is None:
            return d.render(request, "login.html", None, 401, error="That token was refused.",
                            next=session.without_token(request))
        return session.sign_in(d.svc, RedirectResponse(session.without_token(request), 303), request, who)
    who = session.current(d.svc, request)
    return who if who is not None else session.login_redirect(request)


def _guard_post(d: Dashboard, request: Request) -> Principal | Response:
    """The signed-in principal of a dashboard POST, or its refusal: 401 without a session, 403 when
    the request did not come from one of our pages (a cross-site form cannot act with the cookie)."""
    who = session.current(d.svc, request)
    if who is None:
        return Response("Sign in first.", status_code=401)
    if not session.same_origin(request):
        return Response("Refused: this request did not come from a dashboard page.", status_code=403)
    return who


def router(d: Dashboard) -> APIRouter:
    r = APIRouter(include_in_schema=False)

    def page(path: str, template: str, build: Any, active: str | None = None) -> None:
        @r.get(path, response_class=HTMLResponse, name=template)
        def _page(request: Request) -> Response:
            who = _guard(d, request)
            if isinstance(who, Response):
                return who
            ctx = build(request, who)
            if isinstance(ctx, Response):
                return ctx
            return d.render(request, template, who, active=active or path, **ctx)

    def overview_ctx(request: Request, who: Principal) -> dict:
        snap = d.svc.snapshot()
        facts = d.derived.get(snap, "overview-facts", present.overview_facts, by_content=True)
        o = d.derived.get(snap, "overview", lambda s: present.overview(s, facts))
        return {"title": "Overview", "o": o}

    def queues_ctx(request: Request, who: Principal) -> dict:
        mine = who.tenant if who.role == "member" else None
        qs = d.derived.get(d.svc.snapshot(), "queues", views.queues, by_content=True)
        return {"title": "Queues", "tree": present.queue_tree(qs, mine), "mine": mine}

    def jobs_ctx(request: Request, who: Principal) -> dict:
        q = jobs_table.Query.parse(dict(request.query_params))
        snap = d.svc.snapshot()
        tenants = sorted({j.tenant for j in snap.pending.values()}
                         | {r.job.tenant for r in snap.running.values()})
        return {"title": "Jobs", "p": jobs_table.page(snap, d.jobs, q), "tenants": tenants,
                "states": jobs_table.STATES, "reasons": views.REASONS}

    def nodes_ctx(request: Request, who: Principal) -> dict:
        tree, fits = present.fleet_map(d.svc.snapshot())
        return {"title": "Nodes", "tree": tree, "fits": fits}

    page("/", "overview.html", overview_ctx)
    page("/queues", "queues.html", queues_ctx)
    page("/jobs", "jobs.html", jobs_ctx)
    page("/nodes", "nodes.html", nodes_ctx)

    def history_ctx(request: Request, who: Principal) -> dict:
        h = history.history(d.svc, d.sampler, time.time())
        charts = {name: {"x": getattr(h, name).x, "lines": getattr(h, name).lines}
                  for name in ("waits", "jct", "gpu_hours", "preemptions", "allocation")}
        return {"title": "History", "h": h, "charts": charts}

    page("/history", "history.html", history_ctx)

    # fragments: the live parts of pages, re-fetched on each decision event
    def fragment(path: str, template: str, build: Any) -> None:
        @r.get(path, response_class=HTMLResponse, name="fragment:" + template)
        def _fragment(request: Request) -> Response:
            who = session.current(d.svc, request)
            if who is None:
                return Response(status_code=401, headers={"HX-Redirect": "/login"})
            return d.render(request, template, who, **build(request, who))

    fragment("/ui/overview", "overview_live.html", overview_ctx)
    fragment("/ui/queues", "queues_live.html", queues_ctx)
    fragment("/ui/jobs", "jobs_live.html", jobs_ctx)
    fragment("/ui/nodes", "nodes_live.html", nodes_ctx)

    @r.get("/jobs/{job_id}", response_class=HTMLResponse)
    def job_page(job_id: str, request: Request) -> Response:
        who = _guard(d, request)
        if isinstance(who, Response):
            return who
        snap = d.svc.snapshot()
        view = views.job_view(snap, job_id)
        rec = d.svc.store.job(job_id)
        if view is None and rec is None:
            return d.render(request, "missing.html", who, 404, title="No such job", active="/jobs",
                            what=f"No job {job_id!r} is live or stored.")
        why = explain(snap, job_id)
        events = [ev for _, ev in d.svc.events.after(0, limit=10_000)[0] if ev.get("job") == job_id]
        may_change = rec is not None and who.may_write_tenant(rec.tenant)
        return d.render(request, "job.html", who, title=f"Job {job_id}", active="/jobs", job=view, rec=rec,
                        why=why, events=events, may_change=may_change, policies=sorted(PROFILES),
                        pending_job=snap.pending.get(job_id))

    @r.post("/jobs/{job_id}/whatif", response_class=HTMLResponse)
    async def job_whatif(job_id: str, request: Request) -> Response:
        who = _guard_post(d, request)
        if isinstance(who, Response):
            return who
        form = await _form(request)
        try:
            cmp = await run_in_threadpool(whatif_form.compare, d.svc, d.svc.snapshot(), job_id, form)
        except ApiError as e:
            return d.render(request, "whatif_result.html", who, e.status, error=e.message, cmp=None)
        return d.render(request, "whatif_result.html", who, cmp=cmp, error="")

    @r.post("/jobs/{job_id}/{action}", response_class=HTMLResponse)
    async def job_action(job_id: str, action: str, request: Request) -> Response:
        """hold / release / cancel: the service's own call, so a member may touch its tenant's
        jobs only and every refusal is audited."""
        who = _guard_post(d, request)
        if isinstance(who, Response):
            return who
        if action not in JOB_ACTIONS:
            return Response(f"Unknown action {action!r}.", status_code=404)
        try:
            d.svc.change_job(who, job_id, action)
        except ApiError as e:
            return d.render(request, "missing.html", who, e.status, title="Refused", active="/jobs",
                            what=e.message)
        return RedirectResponse(f"/jobs/{job_id}", 303)

    study_page.add_routes(r, d, _guard, _guard_post, _form)
    node_page.add_routes(r, d, _guard, _guard_post, _form)

    @r.get("/ui/events")
    async def events(request: Request) -> Response:
        """The decision stream for a signed-in browser (EventSource sends the cookie, not a
        bearer header): one ``message`` per batch of decisions, numbered as the API's stream."""
        who = session.current(d.svc, request)
        if who is None:
            return Response(status_code=401)
        ring = d.svc.events
        after = request.query_params.get("after", "")
        seq = min(int(after), ring.last) if after.isdigit() and len(after) < 19 else ring.last
        body = stream.messages(ring, d.notifier, seq, request.is_disconnected)
        return StreamingResponse(body, media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    @r.get("/login", response_class=HTMLResponse)
    def login_page(request: Request, next: str = "/") -> Response:
        """The sign-in form; a browser still signed in is told as whom, with the sign-out button."""
        who = session.current(d.svc, request)
        return d.render(request, "login.html", who, next=session.safe_next(next))

    @r.post("/login", response_class=HTMLResponse)
    async def login(request: Request) -> Response:
        form = await _form(request)
        token, nxt = form.get("token", "").strip(), session.safe_next(form.get("next", "/"))
        if not session.same_origin(request):
            return d.render(request, "login.html", None, 403, error="Sign in from this page.", next=nxt)
        who = session.check_token(d.svc, token, request) if token else None
        if who is None:
            return d.render(request, "login.html", None, 401, error="That token was refused.", next=nxt)
        return session.sign_in(d.svc, RedirectResponse(nxt, 303), request, who)

    @r.post("/logout")
    def logout(request: Request) -> Response:
        """Sign out: a POST from one of our pages, as every dashboard action (a cross-site form is
        refused). Without a session it still lands on the sign-in page (a stale tab's button)."""
        if not session.same_origin(request):
            return Response("Refused: this request did not come from a dashboard page.", status_code=403)
        return session.sign_out(d.svc, RedirectResponse("/login", 303), request)

    @r.get("/logout")
    def logout_link(request: Request) -> Response:
        """An old link or bookmark: a GET changes nothing here, so it signs no one out (a link
        another site shows, or a prefetch, would otherwise end the session); it lands on the
        sign-in page, which shows who is still signed in and the button."""
        return RedirectResponse("/login", 303)

    return r


async def _form(request: Request, limit: int = 16_384) -> dict[str, str]:
    """A small urlencoded form, without python-multipart: a field sent more than once (a multiple
    select) has its values joined with commas; too big a body, or more than 40 fields, is empty."""
    raw = await request.body()
    if len(raw) > limit:
        return {}
    try:
        fields = parse_qs(raw.decode("utf-8", "replace"), max_num_fields=40)
    except ValueError:
        return {}
    return {k: ",".join(v) for k, v in fields.items()}


def mount(app: FastAPI, svc: Service) -> None:
    """Add the dashboard's pages and static files to the service's app."""
    d = Dashboard(svc)
    app.state.dashboard = d
    svc.loop.sinks.append(d.sampler.observe)
    svc.loop.sinks.append(d.notifier.observe)   # last: the ring has the events when streams wake
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="dashboard-static")
    app.include_router(router(d))
