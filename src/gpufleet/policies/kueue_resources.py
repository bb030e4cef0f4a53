"""Kueue's quota on resources besides GPUs: cpu and memory per flavor, for the ``kueue`` profile.

A ClusterQueue's resource groups cover GPUs, ``cpu`` and ``memory`` (and any named resource)
per flavor; a workload fits a flavor only when *every* covered resource it requests fits. Per
resource r of flavor f, tenant t, with a demand d (Σ over pods of the pod request):

    no borrowing:   used(t, f, r) + d ≤ nominal(t, f, r)
    borrowing:      used(t, f, r) + d ≤ nominal + borrowing_limit   (when there is a limit), and
                    d ≤ Σ nominal(q, f, r) − Σ used(q, f, r) over the queues of t's root cohort
                    (plus what the cohorts own)

Lending limits on cpu and memory are not modelled (GPU quota keeps the full hierarchical
arithmetic, policies/quota.py). Named resources a job cannot request (our jobs ask GPUs, cpu and
memory only) always fit; a requested resource the queue does not cover is refused, as Kueue
refuses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.types import RunningJob
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy, TenantQueue
from gpufleet.policies.quota import binding_flavor

RESOURCES = ("cpu", "memory_gb")


def demand(job: Job) -> dict[str, float]:
    return {"cpu": sum(ps.request.cpus * ps.replicas for ps in job.pod_sets),
            "memory_gb": sum(ps.request.memory_gb * ps.replicas for ps in job.pod_sets)}


def root_cohort(tenancy: Tenancy, cohort: str | None) -> str | None:
    """The top of ``cohort``'s tree (None without a cohort)."""
    while cohort is not None:
        c = tenancy.cohort(cohort)
        if c is None or c.parent is None:
            return cohort
        cohort = c.parent
    return None


class ResourceLedger:
    """cpu and memory usage per (tenant, flavor, resource); see the module docstring."""

    def __init__(self, tenancy: Tenancy) -> None:
        self.tenancy = tenancy
        self.used: dict[tuple[str, str, str], float] = {}

    @classmethod
    def from_running(cls, tenancy: Tenancy, running: Sequence[RunningJob],
                     skip_evicting: bool = False) -> ResourceLedger:
        led = cls(tenancy)
        if not any(t.resources for t in tenancy.tenants):
            return led  # GPU quota only: nothing here is ever consulted
        for rj in running:
            if not (skip_evicting and rj.evicting):
                led.charge(rj.job.tenant, rj.bindings)
        return led

    def copy(self) -> ResourceLedger:
        out = ResourceLedger(self.tenancy)
        out.used = dict(self.used)
        return out

    def charge(self, tenant: str, bindings: Iterable[PodBinding], sign: int = 1) -> None:
        t = self.tenancy.tenant(tenant)
        default = t.quotas[0][0] if t is not None and t.quotas else ""
        for b in bindings:
            f = binding_flavor(b, default)
            for r, v in (("cpu", b.request.cpus), ("memory_gb", b.request.memory_gb)):
                if v:
                    key = (tenant, f, r)
                    self.used[key] = self.used.get(key, 0.0) + sign * v

    def add_job(self, job: Job, flavor: str, sign: int = 1) -> None:
        for r, v in demand(job).items():
            if v:
                key = (job.tenant, flavor, r)
                self.used[key] = self.used.get(key, 0.0) + sign * v

    @staticmethod
    def _quota(q: TenantQueue, flavor: str, resource: str):
        return next((fq for f, r, fq in q.resources if f == flavor and r == resource), None)

    def refusal(self, job: Job, flavor: str, borrow: bool) -> str | None:
        """The first resource of ``job`` that does not fit ``flavor`` (None: all fit)."""
        t = self.tenancy.tenant(job.tenant)
        if t is None or not t.resources:
            return None  # the queue covers GPUs only: nothing else is counted
        for r, d in demand(job).items():
            if d <= 0:
                continue
            q = self._quota(t, flavor, r)
            if q is None:
                return f"{r} is not covered by ClusterQueue {job.tenant!r} in flavor {flavor}"
            used = self.used.get((job.tenant, flavor, r), 0.0)
            if used + d <= q.nominal and (not borrow or self._pool(t, flavor, r) >= d):
                continue
            if not borrow:
                return f"{r}: {used:g} + {d:g} > nominal {q.nominal}"
            if q.borrowing_limit is not None and used + d > q.nominal + q.borrowing_limit:
                return f"{r}: beyond nominal {q.nominal} + borrowing limit {q.borrowing_limit}"
            if self._pool(t, flavor, r) < d:
                return f"{r}: the cohort has {self._pool(t, flavor, r):g} unused, {d:g} needed"
        return None

    def _pool(self, t: TenantQueue, flavor: str, resource: str) -> float:
        root = root_cohort(self.tenancy, t.cohort)
        if root is None:
            q = self._quota(t, flavor, resource)
            return (q.nominal if q else 0) - self.used.get((t.name, flavor, resource), 0.0)
        total = 0.0
        for q in self.tenancy.tenants:
            if root_cohort(self.tenancy, q.cohort) == root:
                fq = self._quota(q, flavor, resource)
                total += (fq.nominal if fq else 0) - self.used.get((q.name, flavor, resource), 0.0)
        for c in self.tenancy.cohorts:
            if root_cohort(self.tenancy, c.name) == root:
                total += sum(fq.nominal for f, r, fq in c.resources if f == flavor and r == resource)
        return total
