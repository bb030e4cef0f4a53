"""What routes need from the request: the service and the caller.

Every route except ``/healthz`` (and ``/metrics`` when it is public) depends on ``caller``; a
refused token is audited (who tried, with which token id, why) and answered 401.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from gpufleet.service.auth import AuthError, Principal
from gpufleet.service.errors import ApiError
from gpufleet.service.runtime import Service


def service(request: Request) -> Service:
    return request.app.state.service


def caller(request: Request) -> Principal:
    svc: Service = request.app.state.service
    try:
        return svc.auth.check(request.headers.get("authorization"))
    except AuthError as e:
        svc.store.audit(actor=e.token_id, role="none", action="auth",
                        target=f"{request.method} {request.url.path}", outcome="refused", detail=e.reason)
        raise ApiError(401, e.reason, "Authorization", headers={"WWW-Authenticate": "Bearer"}) from None


def admin(who: Annotated[Principal, Depends(caller)], request: Request) -> Principal:
    if who.role != "admin":
        svc: Service = request.app.state.service
        svc.store.audit(actor=who.actor, role=who.role, action="admin", outcome="refused",
                        target=f"{request.method} {request.url.path}", detail="admin only")
        raise ApiError(403, f"{who.role} tokens may not do this; admin only")
    return who


Svc = Annotated[Service, Depends(service)]
Caller = Annotated[Principal, Depends(caller)]
Admin = Annotated[Principal, Depends(admin)]
