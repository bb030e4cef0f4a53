"""Fair-share orderers: which tenant's job is tried next.

``DominantResourceFairShare`` (default), per tenant t with weight w_t, flavors f with capacity
C_f (Σ of nominal quotas of f), current allocation a_{t,f} GPUs and decayed usage U_t GPU-seconds
(half-life H, kept by the driver):

    current_t    = max_f a_{t,f} / C_f                          dominant share held now
    historical_t = U_t × ln 2 / (H × Σ_f C_f)                   fraction of the fleet used lately
    share_t      = ((1 − k) × current_t + k × historical_t) / w_t       k = usage_weight

``historical_t`` is normalised so that a tenant that held g GPUs steadily for many half-lives
scores g / ΣC: ∫₀^∞ g × 2^(−s/H) ds = g × H / ln 2. Jobs are ordered by progressive filling: take
the tenant with the lowest share (ties: tenant name), give it its next job (priority high first,
then submit time, then id), add that job's GPUs to a_{t,f}, recompute its share, repeat. This is
DRF with memory: a tenant that ran a lot lately waits behind one that did not, and one job's turn
costs as many turns as it has GPUs, so splitting a job into many small ones gains nothing.

``SlurmClassicFairShare``: Slurm's classic factor F_t = 2^(−U_t / S_t), with S_t = w_t / Σw the
normalised share and U_t the tenant's fraction of all usage (decayed usage plus GPU-seconds of its
running jobs so far). Tenants go in order of F (high first); jobs within one in priority order.

``FirstComeFirstServed`` and ``SmallestJobFirst`` are naive baselines the tenancy report compares
against: one ignores tenants, the other favours small jobs whoever submits them.

``GuaranteedFirst`` is the order phase of the tenancy profiles: guaranteed jobs, then borrowers,
each in the fair-share order the quota admitter used to decide who gets quota.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from gpufleet.engine.phases.order import priority_fifo
from gpufleet.engine.types import CycleContext, PendingJob, RunningJob
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.quota import admission_book, job_flavor, job_gpus_by_flavor


def _within_tenant(p: PendingJob) -> tuple:
    return (-p.job.priority, p.job.submit_time, p.job.id)


def _by_tenant(admitted: Sequence[PendingJob]) -> dict[str, list[PendingJob]]:
    out: dict[str, list[PendingJob]] = {}
    for p in admitted:
        out.setdefault(p.job.tenant, []).append(p)
    for jobs in out.values():
        jobs.sort(key=_within_tenant)
    return out


def flavor_capacity(tenancy: Tenancy) -> dict[str, int]:
    cap: dict[str, int] = {}
    for t in tenancy.tenants:
        for f, q in t.quotas:
            cap[f] = cap.get(f, 0) + q.nominal
    for c in tenancy.cohorts:
        for f, q in c.quotas:
            cap[f] = cap.get(f, 0) + q.nominal
    return {f: max(v, 1) for f, v in cap.items()}


def _default_flavor(tenancy: Tenancy, tenant: str, capacity: dict[str, int]) -> str:
    t = tenancy.tenant(tenant)
    if t is not None and t.quotas:
        return t.quotas[0][0]
    return next(iter(capacity), "")


def current_allocation(tenancy: Tenancy, running: Sequence[RunningJob],
                       capacity: dict[str, int]) -> dict[str, dict[str, int]]:
    """GPUs each tenant holds now, per flavor (jobs still in their eviction grace included)."""
    alloc: dict[str, dict[str, int]] = {}
    for rj in running:
        tenant = rj.job.tenant
        per = alloc.setdefault(tenant, {})
        for f, g in job_gpus_by_flavor(rj.bindings, _default_flavor(tenancy, tenant, capacity)).items():
            per[f] = per.get(f, 0) + g
    return alloc


def drf_share(alloc: dict[str, int], usage_gpu_s: float, weight: float, capacity: dict[str, int],
              half_life_s: float, usage_weight: float) -> float:
    """The weighted, usage-aware dominant share of one tenant (module docstring). Weight 0 (as
    Kueue allows) means the tenant goes last: an infinite share once it holds anything."""
    current = max((g / capacity.get(f, 1) for f, g in alloc.items()), default=0.0)
    total = sum(capacity.values())
    historical = usage_gpu_s * math.log(2) / (half_life_s * total) if half_life_s > 0 and total else 0.0
    raw = (1.0 - usage_weight) * current + usage_weight * historical
    if weight <= 0:
        return math.inf if raw > 0 else 0.0
    return raw / weight


class DominantResourceFairShare:
    name = "drf"

    def order(self, admitted: Sequence[PendingJob], ctx: CycleContext) -> Sequence[PendingJob]:
        tenancy: Tenancy | None = ctx.tenancy
        if tenancy is None:
            return priority_fifo(admitted)
        capacity = flavor_capacity(tenancy)
        alloc = current_allocation(tenancy, ctx.running, capacity)
        queues = _by_tenant(admitted)

        def share(tenant: str) -> float:
            t = tenancy.tenant(tenant)
            return drf_share(alloc.get(tenant, {}), ctx.usage.get(tenant, 0.0),
                             t.weight if t is not None else 1.0, capacity, tenancy.half_life_s,
                             tenancy.usage_weight)

        heap = [(share(name), name) for name in sorted(queues)]
        heapq.heapify(heap)
        nxt = dict.fromkeys(queues, 0)
        out: list[PendingJob] = []
        while heap:
            _, name = heapq.heappop(heap)
            p = queues[name][nxt[name]]
            nxt[name] += 1
            out.append(p)
            per = alloc.setdefault(name, {})
            f = job_flavor(p.job) or _default_flavor(tenancy, name, capacity)
            per[f] = per.get(f, 0) + p.job.total_gpus
            if nxt[name] < len(queues[name]):
                heapq.heappush(heap, (share(name), name))
        return out


def slurm_factor(usage: float, total_usage: float, weight: float, total_weight: float) -> float:
    """Slurm's classic fair-share factor 2^(−U/S) with U and S normalised to fractions."""
    u = usage / total_usage if total_usage > 0 else 0.0
    s = weight / total_weight if total_weight > 0 else 1.0
    return 2.0 ** (-u / s) if s > 0 else 0.0


class SlurmClassicFairShare:
    name = "slurm-fairshare"

    def order(self, admitted: Sequence[PendingJob], ctx: CycleContext) -> Sequence[PendingJob]:
        tenancy: Tenancy | None = ctx.tenancy
        if tenancy is None:
            return priority_fifo(admitted)
        usage = dict(ctx.usage)
        for rj in ctx.running:
            usage[rj.job.tenant] = usage.get(rj.job.tenant, 0.0) + rj.job.total_gpus * max(
                0.0, ctx.now - rj.start_time)
        total_usage = sum(usage.values())

        def weight(name: str) -> float:
            t = tenancy.tenant(name)
            return t.weight if t is not None else 1.0

        total_weight = sum(t.weight for t in tenancy.tenants)
        factor = {name: slurm_factor(usage.get(name, 0.0), total_usage, weight(name), total_weight)
                  for name in {p.job.tenant for p in admitted}}
        return sorted(admitted, key=lambda p: (-factor[p.job.tenant], p.job.tenant, *_within_tenant(p)))


class FirstComeFirstServed:
    """Submit time, then id: no tenants, no priorities (the free-for-all baseline)."""

    name = "fcfs"

    def order(self, admitted: Sequence[PendingJob], ctx: CycleContext) -> list[PendingJob]:
        return sorted(admitted, key=lambda p: (p.job.submit_time, p.job.id))


class SmallestJobFirst:
    """Fewest GPUs first, then submit time, then id: cuts mean wait, and rewards splitting."""

    name = "smallest-first"

    def order(self, admitted: Sequence[PendingJob], ctx: CycleContext) -> list[PendingJob]:
        return sorted(admitted, key=lambda p: (p.job.total_gpus, p.job.submit_time, p.job.id))


class GuaranteedFirst:
    """Jobs admitted within their tenant's nominal quota first, then borrowers; each tier in the
    fair-share order admission walked (policies/quota.py records both). Jobs admission did not
    record keep their relative order, after the rest."""

    name = "guaranteed-first"

    def order(self, admitted: Sequence[PendingJob], ctx: CycleContext) -> list[PendingJob]:
        seen = admission_book(ctx).by_id()
        last = (2, len(admitted))

        def key(ip: tuple[int, PendingJob]) -> tuple[int, int]:
            r = seen.get(ip[1].job.id)
            return (r.tier, r.rank) if r is not None else (last[0], ip[0])

        return [p for _, p in sorted(enumerate(admitted), key=key)]
