"""``POST /api/v1/whatif``: a job shape and/or a change, simulated forward from the live state."""

from __future__ import annotations

import statistics

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from gpufleet.live.whatif import DEFAULT_BUDGET_S, Change, fork_seeds, never_fits
from gpufleet.model.tenancy import FlavorQuota, Tenancy
from gpufleet.policies.registry import PROFILES, profile
from gpufleet.service.errors import ApiError
from gpufleet.service.jobs import NAME_PATTERN, BadSubmission, build_job, parse_submission
from gpufleet.service.routes.deps import Caller, Svc

router = APIRouter(tags=["whatif"])
MAX_HORIZON_S = 30 * 86400.0
MAX_BUDGET_S = 600.0


class QuotaChange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tenant: str = Field(pattern=NAME_PATTERN)
    flavor: str = Field(max_length=64)
    nominal: int = Field(ge=0, le=10_000_000)
    borrowing_limit: int | None = Field(default=None, ge=0, le=10_000_000)


class WhatIfIn(BaseModel):
    #: A misspelt field ("drains") would otherwise be dropped and the answer be for another question.
    model_config = ConfigDict(extra="forbid")
    #: A job of the trace format (id, submit_time optional): "when would this start?".
    job: dict | None = None
    drain: list[str] = Field(default_factory=list, max_length=100_000)
    quota: list[QuotaChange] = Field(default_factory=list, max_length=1000)
    policy: str | None = Field(default=None, max_length=64)
    horizon_s: float = Field(default=7 * 86400.0, gt=0, le=MAX_HORIZON_S, allow_inf_nan=False)
    seeds: int = Field(default=3, ge=1, le=16)
    jitter: float = Field(default=0.5, ge=0, lt=1, allow_inf_nan=False)
    #: CPU seconds each seed's run may take; a run that spends it stops where it is and says so
    #: (``complete`` false). A jittered seed at 100,000 pending runs for many minutes otherwise.
    budget_s: float = Field(default=DEFAULT_BUDGET_S, gt=0, le=MAX_BUDGET_S, allow_inf_nan=False)


class SeedAnswer(BaseModel):
    seed: int
    start: float | None
    wait_s: float | None
    pending_started: int
    pending_mean_wait_s: float | None
    #: How far ahead of now the run got: the horizon, the probe's start, or less where its CPU
    #: budget ran out first (``complete`` false: the probe had not started by then).
    simulated_s: float
    complete: bool


class WhatIfOut(BaseModel):
    now: float
    horizon_s: float
    #: The probe's wait from now: per seed, and its spread over the seeds where it started.
    runs: list[SeedAnswer]
    started_in: int
    wait_min_s: float | None
    wait_median_s: float | None
    wait_max_s: float | None
    basis: str


def quota_changed(base: Tenancy | None, changes: list[QuotaChange]) -> Tenancy | None:
    """``base`` with each change applied in order (``Tenancy.with_quota``); None for no change;
    ApiError (422, naming the change) when there is no tenancy or no such queue."""
    if not changes:
        return None
    if base is None:
        raise ApiError(422, "quota: this service runs without a tenancy", "quota")
    out = base
    for i, c in enumerate(changes):
        if out.tenant(c.tenant) is None:
            raise ApiError(422, f"quota.{i}.tenant: no queue {c.tenant!r}", f"quota.{i}.tenant")
        out = out.with_quota(c.tenant, c.flavor, FlavorQuota(c.nominal, c.borrowing_limit))
    return out


@router.post("/whatif")
def whatif(body: WhatIfIn, svc: Svc, who: Caller) -> WhatIfOut:
    snap = svc.snapshot()
    probe = None
    if body.job is not None:
        raw = {"id": "whatif-probe", **body.job}
        try:
            sub = parse_submission(raw)
        except BadSubmission as e:
            raise ApiError(422, f"job.{e}", f"job.{e.field}") from None
        probe = build_job(sub, sub.id or "whatif-probe", snap.now)
        never = never_fits(snap.table, probe)
        if never is not None:
            raise ApiError(422, f"job.pod_sets.{never[0]}: can never start on this fleet: {never[1]}",
                           f"job.pod_sets.{never[0]}")
    names = set(snap.table.names)
    for i, n in enumerate(body.drain):
        if n not in names:
            raise ApiError(422, f"drain.{i}: no node {n!r}", f"drain.{i}")
    if body.policy is not None and body.policy not in PROFILES:
        raise ApiError(422, f"policy: expected one of {', '.join(PROFILES)}", "policy")
    if body.quota and body.policy is None and getattr(svc.source, "quota_owner", None):
        raise ApiError(422, f"quota: today's policy over {svc.source.name} reads no quota (it enforces its "
                       "own limits): give a policy with the quota change", "quota")
    change = Change(tuple(body.drain), quota_changed(snap.tenancy, body.quota),
                    profile(body.policy, snap.fleet.fabric) if body.policy else None)
    base = svc.source.profile if hasattr(svc.source, "profile") else profile(svc.config.profile_name)
    runs = []
    for seed, f in enumerate(fork_seeds(snap, base, change, probe, body.seeds, horizon_s=body.horizon_s,
                                        jitter=body.jitter, budget_s=body.budget_s)):
        runs.append(SeedAnswer(seed=seed, start=f.probe_start,
                               wait_s=f.probe_start - snap.now if f.probe_start is not None else None,
                               pending_started=f.started, pending_mean_wait_s=f.mean_wait_s,
                               simulated_s=f.simulated_to - snap.now, complete=f.complete))
    waits = sorted(r.wait_s for r in runs if r.wait_s is not None)
    short = [r for r in runs if not r.complete]
    cut = (f"; {len(short)} of {len(runs)} seed(s) spent their {body.budget_s:g} CPU s first and stopped "
           f"{', '.join(f'{r.simulated_s:.0f}s' for r in short)} ahead, the probe not started by then "
           "(a larger budget_s simulates further)") if short else ""
    return WhatIfOut(
        now=snap.now, horizon_s=body.horizon_s, runs=runs, started_in=len(waits),
        wait_min_s=waits[0] if waits else None, wait_median_s=statistics.median(waits) if waits else None,
        wait_max_s=waits[-1] if waits else None,
        basis="the simulator forked from the live state (running jobs on their nodes, the queue as it is), "
              f"run forward {body.horizon_s:.0f}s; seed 0 with run times as stated, seeds 1.. with each "
              f"remaining run time × U({1 - body.jitter:g}, 1){cut}")
