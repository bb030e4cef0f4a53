"""What every route needs from the request: the service."""

from __future__ import annotations

from fastapi import Request

from gpufleet.service.runtime import Service


def service(request: Request) -> Service:
    return request.app.state.service
