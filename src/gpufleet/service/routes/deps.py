"""What routes need from the request: the service, the caller, a JSON body declared as one.

Every route except ``/healthz`` (and ``/metrics`` when it is public) depends on ``caller``; a
refused token is audited (who tried, with which token id, why) and answered 401. Every route under
``/api/v1`` is mounted by ``api_router``, which puts ``json_body`` in front of it: a route that
takes a body answers 415 to any other media type (errors.not_json), whichever route it is.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from gpufleet.service.auth import AuthError, Principal
from gpufleet.service.errors import ApiError, not_json
from gpufleet.service.runtime import Service

API = "/api/v1"


async def service(request: Request) -> Service:
    """(async: a plain function would cost every request a hop to the thread pool)"""
    return request.app.state.service


async def caller(request: Request) -> Principal:
    """The caller: from the token cache without I/O, else checked (argon2, the store) in a thread."""
    svc: Service = request.app.state.service
    who = svc.auth.cached(request.headers.get("authorization"))
    return who if who is not None else await run_in_threadpool(check_caller, request)


def check_caller(request: Request) -> Principal:
    svc: Service = request.app.state.service
    try:
        return svc.auth.check(request.headers.get("authorization"))
    except AuthError as e:
        svc.store.audit(actor=e.token_id, role="none", action="auth",
                        target=f"{request.method} {request.url.path}", outcome="refused", detail=e.reason)
        raise ApiError(401, e.reason, "Authorization", headers={"WWW-Authenticate": "Bearer"}) from None


async def admin(who: Annotated[Principal, Depends(caller)], request: Request) -> Principal:
    if who.role != "admin":
        svc: Service = request.app.state.service
        await run_in_threadpool(svc.store.audit, actor=who.actor, role=who.role, action="admin",
                                outcome="refused", target=f"{request.method} {request.url.path}",
                                detail="admin only")
        raise ApiError(403, f"{who.role} tokens may not do this; admin only")
    return who


Svc = Annotated[Service, Depends(service)]
Caller = Annotated[Principal, Depends(caller)]
Admin = Annotated[Principal, Depends(admin)]


async def json_body(request: Request, _: Caller) -> None:
    """415 when the route takes a JSON body and the request declares another type; after the
    token (a caller without one learns only 401), before the body is validated (FastAPI resolves
    dependencies first). A route without a body passes at once: ``curl -d '' -X POST …/drain``
    drains. The front's short path (service/front.py) takes only what ``not_json`` passes and
    hands the rest to this route, so both answer alike."""
    if getattr(request.scope.get("route"), "body_field", None) is None:
        return
    refused = not_json(request.headers.get("content-type"), bool(await request.body()))
    if refused is not None:
        raise refused


def api_router(*routers: APIRouter) -> APIRouter:
    """``routers`` under ``/api/v1``, each route behind ``json_body``; a route that takes a body
    lists the 415 in the OpenAPI document."""
    api = APIRouter(prefix=API, dependencies=[Depends(json_body)])
    for r in routers:
        for route in r.routes:
            if isinstance(route, APIRoute) and route.body_field is not None:
                route.responses.setdefault(415, {"description": "the body is not declared as "
                                                 "application/json (Content-Type)"})
        api.include_router(r)
    return api
