"""What routes need from the request: the service and the caller.

Every route except ``/healthz`` (and ``/metrics`` when it is public) depends on ``caller``; a
refused token is audited (who tried, with which token id, why) and answered 401.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from gpufleet.service.auth import AuthError, Principal
from gpufleet.service.errors import ApiError
from gpufleet.service.runtime import Service


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
