"""``create_app(config)``: the service as one FastAPI application.

The app holds one ``Service`` (service/runtime.py: the store, the live loop over its source, auth,
metrics) in ``app.state.service``; routes translate HTTP to calls on it and nothing more. The
dashboard (service/dashboard/, issue 25) is mounted at the one marked place below and reads the
same ``Service`` in-process (the contract: docs/service.md, "Python API").
"""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import FastAPI

from gpufleet.service.config import ServiceConfig
from gpufleet.service.dashboard import mount as mount_dashboard
from gpufleet.service.errors import install_error_handlers
from gpufleet.service.routes import diagnosis, fleet, health, jobs, ops, whatif
from gpufleet.service.routes.deps import API, api_router
from gpufleet.service.runtime import Service

__all__ = ["API", "create_app"]


def create_app(config: ServiceConfig, service: Service | None = None) -> FastAPI:
    svc = service or Service(config)

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202 (Starlette's lifespan protocol)
        svc.start()
        try:
            yield
        finally:
            svc.stop()

    app = FastAPI(title="gpufleet", version="1", lifespan=lifespan,
                  openapi_url=f"{API}/openapi.json", docs_url=f"{API}/docs", redoc_url=None,
                  description="The fleet's control plane: what is pending and why, when it starts, "
                              "who uses which quota, what if.")
    app.state.service = svc
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(ops.metrics_router)
    # diagnosis before fleet's POST /nodes/{name}/{action}
    app.include_router(api_router(diagnosis.router, fleet.router, jobs.router, ops.router, whatif.router))

    mount_dashboard(app, svc)   # the dashboard (issue 25): its pages and static files at /
    return app
