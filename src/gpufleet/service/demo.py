"""``--demo-load``: a generated workload that keeps arriving, for a demo of a live fleet.

The workload is the simulator's generator (sim/workload.py: Poisson arrivals at 70 % offered load,
heavy-tailed gang sizes and run times) for the service's fleet, drawn one simulated day at a time
and submitted through the service's own path (stored, audited as ``system``) when its arrival
time has come on the source clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpufleet.service.auth import SYSTEM
from gpufleet.sim.workload import TenantMix, WorkloadSpec, generate
from gpufleet.traces.jsonl import job_row

if TYPE_CHECKING:
    from gpufleet.service.runtime import Service

DAY = 86400.0


class DemoLoad:
    def __init__(self, svc: Service, seed: int = 0, offered_load: float = 0.7) -> None:
        self.svc = svc
        self.seed = seed
        gpn = max(n.gpus for n in svc.config.fleet.nodes)
        total = svc.config.fleet.total_gpus
        tenants = svc.config.tenancy.tenants if svc.config.tenancy is not None else None
        spec = WorkloadSpec(days=1.0, offered_load=offered_load, max_gpus=min(256, total), gpus_per_node=gpn)
        if tenants:
            spec = WorkloadSpec(days=1.0, offered_load=offered_load, max_gpus=min(256, total),
                                gpus_per_node=gpn, tenants=tuple(TenantMix(t.name, 1.0) for t in tenants))
        self.spec = spec
        self.total = total
        self.day = -1
        self.queue: list[dict] = []

    def _draw(self, day: int) -> None:
        jobs = generate(self.spec, self.total, self.seed + 1000 + day)
        rows = []
        for j in jobs:
            row = job_row(j)
            row["id"] = f"demo-{day}-{j.id}"
            row["submit_time"] = day * DAY + j.submit_time
            rows.append(row)
        self.queue = sorted(rows, key=lambda r: r["submit_time"], reverse=True)

    def feed(self) -> int:
        """Submit every demo job whose arrival time has come; how many."""
        now = self.svc.loop.now()
        n = 0
        while True:
            if not self.queue:
                day = int(now // DAY) if self.day < 0 else self.day + 1
                if day * DAY > now:
                    return n
                self.day = day
                self._draw(day)
                continue
            if self.queue[-1]["submit_time"] > now:
                return n
            row = self.queue.pop()
            self.svc.submit(SYSTEM, row, key=row["id"])
            n += 1
