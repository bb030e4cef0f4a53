"""A real service over a real SQLite store in a temporary folder, its loop ticked by hand.

``served`` gives the app's client, the service and tokens of each role. The fleet: 2 leaves of 4
nodes of 8 H100s (64 GPUs). With ``tenancy`` two tenants, ``a`` (nominal 32) and ``b`` (16), in
one cohort.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

warnings.filterwarnings("ignore", message=".*httpx.*")
from fastapi.testclient import TestClient  # noqa: E402

from gpufleet.model.tenancy import Cohort, FlavorQuota, Tenancy, TenantQueue  # noqa: E402
from gpufleet.service.app import create_app  # noqa: E402
from gpufleet.service.config import ServiceConfig  # noqa: E402
from gpufleet.service.runtime import Service  # noqa: E402
from gpufleet.testing.builders import fleet  # noqa: E402

FLEET = fleet().leaves(2, nodes=4, gpus=8).build()
TENANCY = Tenancy(tenants=(TenantQueue("a", "org", (("H100-80GB", FlavorQuota(32)),)),
                           TenantQueue("b", "org", (("H100-80GB", FlavorQuota(16)),))),
                  cohorts=(Cohort("org"),))


@dataclass
class Served:
    client: TestClient
    svc: Service
    admin: dict[str, str]
    viewer: dict[str, str]
    member_a: dict[str, str]
    member_b: dict[str, str]
    data_dir: Path
    clock: ManualClock

    def tick(self, seconds: float = 0.0) -> None:
        """Advance the wall clock by ``seconds`` (speed 1: source seconds too), then one loop turn."""
        self.clock.t += seconds
        self.svc.tick()

    def post_job(self, body: dict, headers: dict | None = None, key: str | None = None):
        h = dict(headers or self.admin)
        if key is not None:
            h["Idempotency-Key"] = key
        return self.client.post("/api/v1/jobs", json=body, headers=h)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def job_body(jid: str, gpus: int = 8, replicas: int = 1, run_time: float = 3600.0,
             tenant: str | None = None) -> dict:
    body: dict = {"id": jid, "run_time": run_time, "pod_sets": [{"replicas": replicas, "gpus": gpus}]}
    if tenant is not None:
        body["tenant"] = tenant
    return body


class ManualClock:
    """The loop's wall clock, moved only by the test (``Served.tick``)."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def make_service(data_dir: Path, tenancy: Tenancy | None = None,
                 db: str | None = None) -> tuple[Service, ManualClock]:
    cfg = ServiceConfig(fleet=FLEET, tenancy=tenancy, data_dir=data_dir, db=db, run_loop=False,
                        argon2_time_cost=1, argon2_memory_kib=1024)
    svc = Service(cfg)
    clock = ManualClock()
    svc.loop.clock = clock
    return svc, clock


def serve(data_dir: Path, tenancy: Tenancy | None = None, db: str | None = None) -> Served:
    svc, clock = make_service(data_dir, tenancy, db)
    client = TestClient(create_app(svc.config, svc))
    tokens = {"admin": svc.auth.create("admin")[0], "viewer": svc.auth.create("viewer")[0]}
    tokens["a"] = svc.auth.create("member", "a")[0]
    tokens["b"] = svc.auth.create("member", "b")[0]
    return Served(client, svc, bearer(tokens["admin"]), bearer(tokens["viewer"]), bearer(tokens["a"]),
                  bearer(tokens["b"]), data_dir, clock)


@pytest.fixture
def served(tmp_path: Path):
    s = serve(tmp_path / "data")
    with s.client:
        yield s
    s.svc.store.close()


@pytest.fixture
def served_tenancy(tmp_path: Path):
    s = serve(tmp_path / "data", TENANCY)
    with s.client:
        yield s
    s.svc.store.close()
