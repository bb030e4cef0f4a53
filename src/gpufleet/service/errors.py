"""Bad input is a 4xx naming the field and the reason, never a 500.

Every error body is ``{"error": {"status": …, "message": …, "field": …}}``; validation errors
list each field (``errors``) with the first one in ``field``.
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


def _loc(loc: tuple | list) -> str:
    parts = [str(p) for p in loc if p not in ("body",)]
    return ".".join(parts) if parts else "body"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api(_: Request, e: ApiError) -> JSONResponse:
        return JSONResponse(body(e.status, e.message, e.field), e.status, headers=e.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, e: RequestValidationError) -> JSONResponse:
        errs = [{"field": _loc(x.get("loc", ())), "reason": str(x.get("msg", "invalid"))}
                for x in e.errors()]
        first = errs[0] if errs else {"field": "body", "reason": "invalid"}
        return JSONResponse(body(422, f"{first['field']}: {first['reason']}", first["field"],
                                 errors=errs), 422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, e: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(body(e.status_code, str(e.detail)), e.status_code,
                            headers=getattr(e, "headers", None))
