"""Detectors for the ways tenants game a fair-share system. Pure functions over jobs and outcomes.

The policy itself removes most gains (quota caps what idle placeholders and inflated requests can
hold, dominant-share accounting charges GPUs rather than jobs, priority counts only within a
tenant and within its budget). What it cannot remove it flags, per tenant:

* ``idle-allocation``: Σ GPUs × run time × (1 − utilisation) / Σ GPUs × run time above
  ``IDLE_THRESHOLD``. Utilisation per job comes from the driver's telemetry (label
  ``gpu-util``, a fraction; jobs without it count as fully used).
* ``runtime-underestimate``: median of actual / estimated run time above ``RUNTIME_THRESHOLD``
  over jobs that gave an estimate: the tenant's estimates should be stretched before backfill
  trusts them (``CycleContext.planned_run`` does, with the driver's per-tenant record).
* ``priority-over-budget``: GPUs the tenant asked for in raised or non-preemptible classes exceed
  its ``priority_budget_gpus`` (the excess ran as the default class).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.quota import raised

UTIL_LABEL = "gpu-util"
IDLE_THRESHOLD = 0.3
RUNTIME_THRESHOLD = 1.5


def utilisation(job: Job) -> float:
    for k, v in job.labels:
        if k == UTIL_LABEL:
            return float(v)
    return 1.0


def idle_allocation(jobs: Iterable[Job]) -> dict[str, float]:
    """Fraction of each tenant's allocated GPU-time that did no work."""
    held: dict[str, float] = {}
    idle: dict[str, float] = {}
    for j in jobs:
        gs = j.total_gpus * j.run_time
        held[j.tenant] = held.get(j.tenant, 0.0) + gs
        idle[j.tenant] = idle.get(j.tenant, 0.0) + gs * (1.0 - utilisation(j))
    return {t: idle[t] / held[t] if held[t] else 0.0 for t in sorted(held)}


def runtime_accuracy(jobs: Iterable[Job]) -> dict[str, float]:
    """Median actual / estimated run time per tenant (1.0 = honest; 4.0 = estimates 4× too short)."""
    ratios: dict[str, list[float]] = {}
    for j in jobs:
        if j.run_time_estimate:
            ratios.setdefault(j.tenant, []).append(j.run_time / j.run_time_estimate)
    return {t: float(np.median(r)) for t, r in sorted(ratios.items())}


def raised_demand(jobs: Iterable[Job], tenancy: Tenancy) -> dict[str, int]:
    """Peak-free proxy: GPUs per tenant asked in raised or non-preemptible classes."""
    out: dict[str, int] = {}
    for j in jobs:
        if raised(tenancy, j):
            out[j.tenant] = out.get(j.tenant, 0) + j.total_gpus
    return out


def flag_tenants(jobs: Iterable[Job], tenancy: Tenancy | None = None) -> dict[str, list[str]]:
    """Tenant → the gaming flags it raised, sorted; tenants with none are left out."""
    jobs = list(jobs)
    flags: dict[str, list[str]] = {}
    for t, frac in idle_allocation(jobs).items():
        if frac > IDLE_THRESHOLD:
            flags.setdefault(t, []).append(f"idle-allocation ({100 * frac:.0f}% of held GPU-time idle)")
    for t, ratio in runtime_accuracy(jobs).items():
        if ratio > RUNTIME_THRESHOLD:
            flags.setdefault(t, []).append(f"runtime-underestimate (runs {ratio:.1f}× its estimates)")
    if tenancy is not None:
        for t, gpus in raised_demand(jobs, tenancy).items():
            q = tenancy.tenant(t)
            if q is not None and q.priority_budget_gpus is not None and gpus > q.priority_budget_gpus:
                flags.setdefault(t, []).append(
                    f"priority-over-budget ({gpus} GPUs asked high/non-preemptible, budget "
                    f"{q.priority_budget_gpus})")
    return {t: sorted(v) for t, v in sorted(flags.items())}
