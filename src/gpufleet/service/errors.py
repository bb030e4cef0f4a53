"""Bad input is a 4xx naming the field and the reason, never a 500.

Every error body is ``{"error": {"status": …, "message": …, "field": …}}``; validation errors
list each field (``errors``) with the first one in ``field``.

A body of another media type than JSON is a 415 naming the header (``not_json``), before it is
read: ``curl -d`` sends ``application/x-www-form-urlencoded``, and reading those bytes as the
body's model answered "body: Input should be a valid dictionary", naming neither the header nor
the fix.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException


class ApiError(Exception):
    def __init__(self, status: int, message: str, field: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.field, self.headers = status, message, field, headers


def body(status: int, message: str, field: str | None = None, **extra: object) -> dict:
    return {"error": {"status": status, "message": message, "field": field, **extra}}


#: What a JSON-body route is told when the type is wrong: the usual cause is curl's ``-d``.
JSON_HINT = "(with curl -d, add -H 'Content-Type: application/json')"


def not_json(content_type: str | None, has_body: bool) -> ApiError | None:
    """The 415 for a request to a JSON-body route, or None when its body may be read as JSON:
    ``application/json`` or a ``+json`` type (RFC 6839), any parameters, any case; the two that
    FastAPI parses as JSON, so the check and the parser never disagree. No type at all is refused
    too, as FastAPI's strict default does (the front's short path alone used to read it as JSON,
    and only once the token was cached: a client's first submission was refused, its second
    taken); with no body either, the body's own 422 ("Field required") says more."""
    if content_type is None and not has_body:
        return None
    sent = (content_type or "").split(";", 1)[0].strip()
    kind, _, sub = sent.lower().partition("/")
    if kind == "application" and (sub == "json" or sub.endswith("+json")):
        return None
    return ApiError(415, f"Content-Type: expected application/json, got {sent[:100] or 'none'} "
                    f"{JSON_HINT}", "Content-Type")


def _loc(loc: tuple | list) -> str:
    parts = [str(p) for p in loc if p not in ("body",)]
    return ".".join(parts) if parts else "body"


def _field_reason(x: dict) -> dict[str, str]:
    """One validation error as the field and the reason. A body that is not JSON is FastAPI's
    ``json_invalid`` at ``("body", position)``: the field is the body, the position is in the
    reason (it read "0: JSON decode error", on the field "0")."""
    if x.get("type") == "json_invalid":
        loc = x.get("loc", ())
        at = f" (at character {loc[1]})" if len(loc) > 1 else ""
        return {"field": "body", "reason": f"not valid JSON: {x.get('ctx', {}).get('error', 'invalid')}{at}"}
    return {"field": _loc(x.get("loc", ())), "reason": str(x.get("msg", "invalid"))}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api(_: Request, e: ApiError) -> JSONResponse:
        return JSONResponse(body(e.status, e.message, e.field), e.status, headers=e.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, e: RequestValidationError) -> JSONResponse:
        errs = [_field_reason(x) for x in e.errors()]
        first = errs[0] if errs else {"field": "body", "reason": "invalid"}
        return JSONResponse(body(422, f"{first['field']}: {first['reason']}", first["field"],
                                 errors=errs), 422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, e: StarletteHTTPException) -> JSONResponse:
        cause = e.__cause__
        if e.status_code == 400 and isinstance(cause, UnicodeDecodeError):
            # FastAPI's "There was an error parsing the body": a JSON body that is not UTF-8
            why = f"not valid JSON: not UTF-8 ({cause.reason} at byte {cause.start})"
            return JSONResponse(body(422, f"body: {why}", "body", errors=[{"field": "body", "reason": why}]),
                                422)
        return JSONResponse(body(e.status_code, str(e.detail)), e.status_code,
                            headers=getattr(e, "headers", None))
