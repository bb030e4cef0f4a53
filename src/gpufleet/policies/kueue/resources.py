"""Kueue's quota on resources besides GPUs: cpu and memory per flavor, for the ``kueue`` profile.

A ClusterQueue's resource groups cover GPUs, ``cpu`` and ``memory`` (and any named resource)
per flavor; a workload fits a flavor only when *every* covered resource it requests fits. Per
resource r of flavor f, tenant t, with a demand d (Σ over pods of the pod request):

    no borrowing:   used(t, f, r) + d ≤ nominal(t, f, r)
    borrowing:      used(t, f, r) + d ≤ nominal + borrowing_limit   (when there is a limit), and
                    d ≤ Σ nominal(q, f, r) − Σ used(q, f, r) over the queues of t's root cohort
                    (plus what the cohorts own)

Resource groups (Kueue's ``resourceGroups``): without them one group covers everything and cpu
and memory are counted on the workload's GPU flavor. A queue with ``resource_groups`` counts the
resources of the GPU's group on the GPU flavor, and gives each group without ``gpu`` a flavor of
its own, as Kueue's flavor assigner does per group: the first of the group's flavors where the
group's demand fits without borrowing, or by borrowing with ``whenCanBorrow: Borrow``; else the
first where it fits by borrowing; none: the workload does not fit. The flavor a workload got is
remembered (``assigned``, carried by the driver in AdmissionState.group_flavors) so its usage is
charged there while it runs; a workload without a record (a one-shot driver) is charged on the
group's first flavor.

Lending limits on cpu and memory are not modelled in admission (GPU quota keeps the full
hierarchical arithmetic, policies/quota.py). Named resources a job cannot request (our jobs ask GPUs, cpu and
memory only) always fit; a requested resource the queue does not cover is refused, as Kueue
refuses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.types import RunningJob
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.tenancy import GPU_RESOURCE, Tenancy, TenantQueue
from gpufleet.policies.quota import QuotaLedger, binding_flavor

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


#: A queue's groups without GPUs: (resources covered, flavors in order).
Groups = tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]


def split_groups(q: TenantQueue) -> tuple[frozenset[str] | None, Groups]:
    """(the resources counted on the GPU flavor, None: all; the groups without gpu)."""
    if not q.resource_groups:
        return None, ()
    on_gpu: frozenset[str] = frozenset()
    others = []
    for g in q.resource_groups:
        if GPU_RESOURCE in g:
            on_gpu = frozenset(g)
            continue
        flavors = tuple(dict.fromkeys(f for f, r, _ in q.resources if r in g))
        others.append((tuple(g), flavors))
    return on_gpu, tuple(others)


class ResourceLedger:
    """cpu and memory usage per (tenant, flavor, resource); see the module docstring."""

    def __init__(self, tenancy: Tenancy, assigned: Mapping[JobId, tuple[str, ...]] | None = None) -> None:
        self.tenancy = tenancy
        self.used: dict[tuple[str, str, str], float] = {}
        #: Per workload, the flavor of each of its queue's groups without gpu, in group order.
        self.assigned: dict[JobId, tuple[str, ...]] = dict(assigned or {})
        self._split: dict[str, tuple[frozenset[str] | None, Groups]] = {}

    @classmethod
    def from_running(cls, tenancy: Tenancy, running: Sequence[RunningJob],
                     skip_evicting: bool = False,
                     assigned: Mapping[JobId, tuple[str, ...]] | None = None) -> ResourceLedger:
        led = cls(tenancy, assigned)
        if not any(t.resources for t in tenancy.tenants):
            return led  # GPU quota only: nothing here is ever consulted
        for rj in running:
            if not (skip_evicting and rj.evicting):
                led.charge(rj.job.tenant, rj.bindings)
        return led

    def copy(self) -> ResourceLedger:
        out = ResourceLedger(self.tenancy)
        out.used = dict(self.used)
        out.assigned = dict(self.assigned)
        out._split = self._split
        return out

    def groups(self, t: TenantQueue) -> tuple[frozenset[str] | None, Groups]:
        hit = self._split.get(t.name)
        if hit is None:
            hit = self._split[t.name] = split_groups(t)
        return hit

    def _bump(self, tenant: str, flavor: str, resource: str, v: float) -> None:
        key = (tenant, flavor, resource)
        self.used[key] = self.used.get(key, 0.0) + v

    def charge(self, tenant: str, bindings: Iterable[PodBinding], sign: int = 1) -> None:
        t = self.tenancy.tenant(tenant)
        default = t.quotas[0][0] if t is not None and t.quotas else ""
        on_gpu, others = self.groups(t) if t is not None else (None, ())
        for b in bindings:
            f = binding_flavor(b, default)
            for r, v in (("cpu", b.request.cpus), ("memory_gb", b.request.memory_gb)):
                if not v:
                    continue
                if on_gpu is None or r in on_gpu:
                    self._bump(tenant, f, r, sign * v)
                    continue
                for i, (g, flavors) in enumerate(others):
                    if r in g and flavors:
                        got = self.assigned.get(b.job)
                        self._bump(tenant, got[i] if got and i < len(got) else flavors[0], r, sign * v)

    def add_job(self, job: Job, flavor: str, sign: int = 1) -> None:
        t = self.tenancy.tenant(job.tenant)
        on_gpu, others = self.groups(t) if t is not None else (None, ())
        dem = demand(job)
        if others and t is not None:
            got = self.assigned.get(job.id)
            if got is None or len(got) != len(others):
                got = tuple(self.group_flavor(t, job, g, fl) or (fl[0] if fl else "") for g, fl in others)
                if sign > 0:
                    self.assigned[job.id] = got
            for (g, _), fl in zip(others, got, strict=True):
                for r in g:
                    if dem.get(r):
                        self._bump(job.tenant, fl, r, sign * dem[r])
        for r, v in dem.items():
            if v and (on_gpu is None or r in on_gpu):
                self._bump(job.tenant, flavor, r, sign * v)

    @staticmethod
    def _quota(q: TenantQueue, flavor: str, resource: str):
        return next((fq for f, r, fq in q.resources if f == flavor and r == resource), None)

    def _check(self, t: TenantQueue, flavor: str, r: str, d: float, borrow: bool) -> str | None:
        """Why ``d`` more of ``r`` does not fit ``flavor`` for ``t`` (None: it fits)."""
        q = self._quota(t, flavor, r)
        if q is None:
            return f"{r} is not covered by ClusterQueue {t.name!r} in flavor {flavor}"
        used = self.used.get((t.name, flavor, r), 0.0)
        if used + d <= q.nominal and (not borrow or self._pool(t, flavor, r) >= d):
            return None
        if not borrow:
            return f"{r}: {used:g} + {d:g} > nominal {q.nominal}"
        if q.borrowing_limit is not None and used + d > q.nominal + q.borrowing_limit:
            return f"{r}: beyond nominal {q.nominal} + borrowing limit {q.borrowing_limit}"
        if self._pool(t, flavor, r) < d:
            return f"{r}: the cohort has {self._pool(t, flavor, r):g} unused, {d:g} needed"
        return None

    def group_flavor(self, t: TenantQueue, job: Job, group: tuple[str, ...],
                     flavors: tuple[str, ...]) -> str | None:
        """The flavor of a group without gpu that ``job``'s demand takes (module docstring)."""
        need = {r: d for r, d in demand(job).items() if r in group and d > 0}
        if not need:
            return flavors[0] if flavors else None
        borrow_at: str | None = None
        for f in flavors:
            if all(self._check(t, f, r, d, False) is None for r, d in need.items()):
                return f
            if t.cohort and all(self._check(t, f, r, d, True) is None for r, d in need.items()):
                if t.kueue.when_can_borrow == "Borrow":
                    return f
                borrow_at = borrow_at or f
        return borrow_at

    def refusal(self, job: Job, flavor: str, borrow: bool) -> str | None:
        """The first resource of ``job`` that does not fit ``flavor`` (None: all fit); with
        resource groups, the resources of the groups without gpu on a flavor of their own."""
        t = self.tenancy.tenant(job.tenant)
        if t is None or not t.resources:
            return None  # the queue covers GPUs only: nothing else is counted
        on_gpu, others = self.groups(t)
        for r, d in demand(job).items():
            if d <= 0:
                continue
            if on_gpu is not None and r not in on_gpu:
                if not any(r in g for g, _ in others):
                    return f"{r} is not covered by a resource group of ClusterQueue {job.tenant!r}"
                continue
            why = self._check(t, flavor, r, d, borrow)
            if why is not None:
                return why
        for g, flavors in others:
            if any(demand(job).get(r) for r in g) and self.group_flavor(t, job, g, flavors) is None:
                return (f"{', '.join(r for r in g if demand(job).get(r))}: no flavor of its resource group "
                        f"({', '.join(flavors) or '-'}) has room")
        return None

    def gpus_fit_but(self, ledger: QuotaLedger, job: Job, cands: tuple[str, ...]) -> str | None:
        """Why cpu or memory refuse ``job`` on the first flavor where its GPUs fit, or None."""
        t = self.tenancy.tenant(job.tenant)
        if t is None or not t.resources:
            return None
        for f in cands or ("",):
            q = t.quota(f)
            used, g = ledger.used(job.tenant, f), job.total_gpus
            within_limit = q.borrowing_limit is None or used + g <= q.nominal + q.borrowing_limit
            room = g <= ledger.available(("t", job.tenant), f) if t.cohort else used + g <= q.nominal
            if not g or (within_limit and room):
                return self.refusal(job, f, used + g > q.nominal)
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
