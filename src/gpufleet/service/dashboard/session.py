"""Signing in to the dashboard: a server-side session, its random id in an HTTP-only cookie.

Signing in checks the API token once (``Auth.check``) and opens a session: the cookie gets
``secrets.token_urlsafe(32)``, the store keeps only its SHA-256, the token id it stands for and
its expiry (the shorter of ``MAX_AGE_S`` and the token's own). The cookie is not the token: it
does not authenticate on ``/api/v1``, and signing out deletes the row, so the old cookie is dead
even if copied. SHA-256 (not argon2) is enough: the id is 256 random bits, so there is nothing
to guess from a leaked hash, and a fast hash keeps every request cheap.

Every request reads the session and the token behind it, from the shared store (SQLite or
PostgreSQL): a revoked or expired token signs the browser out at its next request, on any
replica. The cookie is ``HttpOnly`` (page scripts cannot read it), ``SameSite=Lax`` (sent on a
top-level link from elsewhere, so a shared ``/?token=`` link lands signed in, and never on
another site's POST) and ``Secure`` when the page came over HTTPS.

Every POST from a page must also come from this origin (``Origin``, or ``Referer`` when a browser
sends no Origin): with Lax cookies that is the second lock on cross-site requests.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from urllib.parse import urlencode, urlsplit

from fastapi import Request
from fastapi.responses import RedirectResponse, Response

from gpufleet.service.auth import AuthError, Principal, valid_principal
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


def _digest(sid: str) -> str:
    return hashlib.sha256(sid.encode()).hexdigest()


def current(svc: Service, request: Request) -> Principal | None:
    """The principal of the browser's session while both it and its token are valid."""
    sid = request.cookies.get(COOKIE)
    found = svc.store.session(_digest(sid)) if sid else None
    if found is None:
        return None
    rec, now = svc.store.token(found[0]), time.time()
    if found[1] <= now or rec is None:
        return None
    try:
        return valid_principal(rec, now)
    except AuthError:
        return None


def sign_in(svc: Service, response: Response, request: Request, who: Principal) -> Response:
    """Open a session for a principal whose token just checked, and audit it."""
    sid, rec = secrets.token_urlsafe(32), svc.store.token(who.token_id)
    expires = time.time() + MAX_AGE_S
    if rec is not None and rec.expires_at is not None:
        expires = min(expires, rec.expires_at)
    svc.store.add_session(_digest(sid), who.token_id, expires)
    svc.store.audit(actor=who.token_id, role=who.role, action="session.sign_in", target="dashboard",
                    outcome="ok")
    response.set_cookie(COOKIE, sid, max_age=MAX_AGE_S, httponly=True, samesite="lax",
                        secure=request.url.scheme == "https", path="/")
    return response


def sign_out(svc: Service, response: Response, request: Request) -> Response:
    """End the session server-side (the old cookie is refused after this), and audit it."""
    sid = request.cookies.get(COOKIE)
    tid = svc.store.delete_session(_digest(sid)) if sid else None
    if tid is not None:
        svc.store.audit(actor=tid, role="none", action="session.sign_out", target="dashboard",
                        outcome="ok")
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
