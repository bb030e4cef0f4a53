"""Signing in to the dashboard: an API token, kept in an HTTP-only cookie.

The cookie holds the token itself, so every check is the API's own (``Auth.check``: argon2 on a
cache miss, revocation and expiry on every request) and a revoked token signs the browser out at
its next request, on any replica. It is ``HttpOnly`` (page scripts cannot read it), ``SameSite=Lax``
(sent on a top-level link from elsewhere, so a shared ``/?token=`` link lands signed in, and never
on another site's POST) and ``Secure`` when the page came over HTTPS.

Every POST from a page must also come from this origin (``Origin``, or ``Referer`` when a browser
sends no Origin): with Lax cookies that is the second lock on cross-site requests.
"""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

from fastapi import Request
from fastapi.responses import RedirectResponse, Response

from gpufleet.service.auth import AuthError, Principal
from gpufleet.service.runtime import Service

COOKIE = "gpufleet_session"
#: A session lasts as long as its token, at most this long in the browser (seconds).
MAX_AGE_S = 7 * 86400


def check_token(svc: Service, token: str, request: Request) -> Principal | None:
    """The token's principal, or None (the refusal is audited like the API's)."""
    try:
        return svc.auth.check(f"Bearer {token}")
    except AuthError as e:
        svc.store.audit(actor=e.token_id, role="none", action="auth", outcome="refused",
                        target=f"{request.method} {request.url.path} (dashboard)", detail=e.reason)
        return None


def current(svc: Service, request: Request) -> Principal | None:
    token = request.cookies.get(COOKIE)
    return check_token(svc, token, request) if token else None


def sign_in(response: Response, request: Request, token: str) -> Response:
    response.set_cookie(COOKIE, token, max_age=MAX_AGE_S, httponly=True, samesite="lax",
                        secure=request.url.scheme == "https", path="/")
    return response


def sign_out(response: Response) -> Response:
    response.delete_cookie(COOKIE, path="/")
    return response


def without_token(request: Request) -> str:
    """The request's path and query with ``token`` taken out (where ``/?token=`` redirects)."""
    rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
    return request.url.path + (f"?{urlencode(rest)}" if rest else "")


def login_redirect(request: Request) -> RedirectResponse:
    return RedirectResponse(f"/login?{urlencode({'next': without_token(request)})}", status_code=303)


def safe_next(target: str | None) -> str:
    """Only a path on this site (never ``//evil`` or ``https://…``): an open redirect is refused."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def same_origin(request: Request) -> bool:
    """True when the request says it comes from a page of this site."""
    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin:
        return False
    o = urlsplit(origin)
    return (o.scheme, o.netloc) == (request.url.scheme, request.url.netloc)


def label(who: Principal) -> str:
    """'ops-team · admin', 'member of a' (a token's name is shown when it is not just its role)."""
    role = f"member of {who.tenant}" if who.role == "member" else who.role
    return f"{who.name} · {role}" if who.name and who.name != who.role else role
