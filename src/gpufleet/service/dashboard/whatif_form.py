"""The job page's what-if: this job with another shape, quota or policy, beside today's answer.

Both columns come from the simulator forked from the live snapshot (gpufleet.live.whatif.fork,
the one the API's ``POST /api/v1/whatif`` runs). The job itself is taken out of the fork's queue
and put back as the probe (its own id, tenant, priority and submit time, so it keeps its place):
"today" is the probe unchanged, the other column the probe with the change. Each column is the
probe's wait from now over ``SEEDS`` seeds (seed 0: run times as stated; others: each remaining run
time × U(0.5, 1)), as the API's answer: min / median / max over the seeds where it started. The
seeds run as the API's do (``fork_seeds``: child processes, one per core at a time), not one
after another on the web server's thread, which held the scheduler process's interpreter for
the whole of them.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

from gpufleet.engine.profile import Profile
from gpufleet.live.snapshot import LiveSnapshot
from gpufleet.live.whatif import DEFAULT_BUDGET_S, Change, fork_seeds
from gpufleet.model.job import Job
from gpufleet.model.tenancy import FlavorQuota
from gpufleet.policies.registry import PROFILES, profile
from gpufleet.service.errors import ApiError
from gpufleet.service.runtime import Service

SEEDS = 3
HORIZON_S = 7 * 86400.0
MAX_COUNT = 100_000


@dataclass(frozen=True)
class Answer:
    label: str
    started_in: int
    seeds: int
    wait_min_s: float | None
    wait_median_s: float | None
    wait_max_s: float | None
    start_median: float | None
    #: Runs that spent their CPU budget before the probe started (how far they got unknown beyond).
    stopped: int = 0


@dataclass(frozen=True)
class Comparison:
    today: Answer
    changed: Answer
    change_words: str
    basis: str


def _int(form: dict[str, str], key: str) -> int | None:
    raw = form.get(key, "").strip()
    if not raw:
        return None
    try:
        v = float(raw)
    except ValueError:
        raise ApiError(422, f"{key}: expected a whole number, got {raw[:40]!r}", key) from None
    if not math.isfinite(v) or v != int(v) or not 0 <= v <= MAX_COUNT:
        raise ApiError(422, f"{key}: expected a whole number from 0 to {MAX_COUNT:,}, got {raw[:40]!r}", key)
    return int(v)


def today_profile(svc: Service, snap: LiveSnapshot) -> Profile:
    """The profile the loop runs (the source's own), or the configured one by name."""
    return getattr(svc.source, "profile", None) or profile(svc.config.profile_name, snap.fleet.fabric)


def _answer(label: str, snap: LiveSnapshot, svc: Service, change: Change, probe: Job) -> Answer:
    base = today_profile(svc, snap)
    runs = fork_seeds(snap, base, change, probe, SEEDS, horizon_s=HORIZON_S, budget_s=DEFAULT_BUDGET_S)
    starts = [f.probe_start for f in runs]
    waits = sorted(t - snap.now for t in starts if t is not None)
    med = statistics.median(waits) if waits else None
    return Answer(label, len(waits), SEEDS, waits[0] if waits else None, med, waits[-1] if waits else None,
                  snap.now + med if med is not None else None, sum(not f.complete for f in runs))


def compare(svc: Service, snap: LiveSnapshot, job_id: str, form: dict[str, str]) -> Comparison:
    """Today's answer and the changed one for a pending job; ApiError (422) naming the field for
    bad input, 409 when the job is not pending."""
    job = snap.pending.get(job_id)
    if job is None:
        raise ApiError(409, f"job {job_id!r} is not pending: a what-if asks when a waiting job starts")
    pods, gpus, nominal = _int(form, "pods"), _int(form, "gpus"), _int(form, "nominal")
    policy = form.get("policy", "").strip() or None
    if policy is not None and policy not in PROFILES:
        raise ApiError(422, f"policy: expected one of {', '.join(PROFILES)}", "policy")
    words = []
    probe = job
    if pods is not None or gpus is not None:
        if len(job.pod_sets) != 1:
            raise ApiError(422, "pods: only a job with one pod set can be reshaped here", "pods")
        ps = job.pod_sets[0]
        new = replace(ps, replicas=pods if pods is not None else ps.replicas,
                      request=replace(ps.request, gpus=gpus if gpus is not None else ps.request.gpus))
        if new.replicas < 1:
            raise ApiError(422, "pods: at least 1", "pods")
        probe = replace(job, pod_sets=(new,))
        words.append(f"{new.replicas} pods × {new.request.gpus} GPUs")
    tenancy = None
    if nominal is not None:
        flavors = sorted({n.gpu for n in snap.fleet.nodes})
        flavor = form.get("flavor", "").strip() or flavors[0]
        if flavor not in flavors:
            raise ApiError(422, f"flavor: the fleet has {', '.join(flavors)}", "flavor")
        if snap.tenancy is None or snap.tenancy.tenant(job.tenant) is None:
            raise ApiError(422, f"nominal: tenant {job.tenant!r} has no queue to change", "nominal")
        if policy is None and getattr(svc.source, "quota_owner", None):
            raise ApiError(422, f"nominal: today's policy over {svc.source.name} reads no quota (it enforces "
                           "its own limits): choose a policy too", "nominal")
        tenancy = snap.tenancy.with_quota(job.tenant, flavor, FlavorQuota(nominal, None))
        words.append(f"tenant {job.tenant}'s {flavor} nominal quota {nominal}")
    if policy is not None:
        words.append(f"policy {policy}")
    if not words:
        raise ApiError(422, "change something: a shape, a quota or a policy", "pods")
    rest = replace(snap, pending={k: v for k, v in snap.pending.items() if k != job_id})
    change = Change(tenancy=tenancy, profile=profile(policy, snap.fleet.fabric) if policy else None)
    return Comparison(
        today=_answer("today", rest, svc, Change(), job),
        changed=_answer("with the change", rest, svc, change, probe),
        change_words=", ".join(words),
        basis=f"the simulator forked from the live state, {SEEDS} seeds, up to {HORIZON_S / 86400:g} days "
              "ahead (seed 0: run times as stated; the others: each remaining run time × U(0.5, 1)), "
              f"each run given at most {DEFAULT_BUDGET_S:g} s of CPU")
