"""Kueue's preemption candidates, and the quota-only oracle its flavor assigner consults.

Shared by admission (policies/kueue/admit.py, which must know, per flavor, whether a workload
could get in by preemption before it picks a flavor) and preemption (policies/
kueue/preemption.py, which then searches real targets). From Kueue's concept doc "Preemption"
and its scheduler: a workload W of ClusterQueue X, g GPUs of flavor f,

* candidates in X satisfying X's ``withinClusterQueue``: ``LowerPriority`` (priority < W's),
  ``LowerOrNewerEqualPriority`` (lower, or equal and submitted after W), ``Never``;
* candidates in other queues of X's cohort tree that are borrowing f, satisfying
  ``reclaimWithinCohort`` (``LowerPriority``, ``Any``); when W would itself borrow (classic,
  no fair sharing) additionally ``borrowWithinCohort: LowerPriority`` with priority below W's
  and ≤ ``maxPriorityThreshold``;
* order: lower priority first, then most recently started (other queues' candidates are tried
  before X's own by the target search).

These are the candidates of fair-sharing preemption (Kueue's ``findCandidates``); classical
preemption classifies them by the cohort tree (policies/kueue/targets.py), which also holds
the quota-only oracle the flavor assigner consults.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpufleet.engine.types import RunningJob
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.kueue.resources import root_cohort
from gpufleet.policies.quota import QuotaLedger, job_gpus_by_flavor


def gpus_on(ledger: QuotaLedger, rj: RunningJob, flavor: str,
            cache: dict[JobId, dict[str, int]] | None = None) -> int:
    """GPUs of ``flavor`` that ``rj`` holds (``cache``: per job, filled on first use)."""
    if cache is None:
        return job_gpus_by_flavor(rj.bindings, ledger.default_flavor(rj.job.tenant)).get(flavor, 0)
    per = cache.get(rj.job.id)
    if per is None:
        per = cache[rj.job.id] = job_gpus_by_flavor(rj.bindings, ledger.default_flavor(rj.job.tenant))
    return per.get(flavor, 0)


def _key(rj: RunningJob) -> tuple:
    return (rj.job.priority, -rj.start_time, rj.job.id)


#: Kueue's candidate order: lower priority first, then the most recently admitted.
candidate_key = _key


def candidates(job: Job, flavor: str, tenancy: Tenancy, ledger: QuotaLedger,
               live: Iterable[RunningJob], cache: dict[JobId, dict[str, int]] | None = None
               ) -> tuple[list[RunningJob], list[RunningJob]]:
    """(own queue's candidates, other queues' candidates), each in Kueue's order."""
    queue = tenancy.tenant(job.tenant)
    assert queue is not None
    pol, p = queue.kueue, job.priority
    within_nominal = ledger.used(job.tenant, flavor) + job.total_gpus <= queue.quota(flavor).nominal
    root = root_cohort(tenancy, queue.cohort)
    own: list[RunningJob] = []
    others: list[RunningJob] = []
    borrowing: dict[str, bool] = {}
    roots: dict[str, str | None] = {}
    for rj in live:
        if gpus_on(ledger, rj, flavor, cache) == 0:
            continue
        q = rj.job.priority
        if rj.job.tenant == job.tenant:
            if (pol.within_cluster_queue == "LowerPriority" and q < p) or (
                    pol.within_cluster_queue == "LowerOrNewerEqualPriority"
                    and (q < p or (q == p and rj.job.submit_time > job.submit_time))):
                own.append(rj)
            continue
        name = rj.job.tenant
        if name not in roots:
            other = tenancy.tenant(name)
            roots[name] = root_cohort(tenancy, other.cohort) if other is not None else None
            borrowing[name] = not ledger.within_nominal(name, flavor)
        if root is None or roots[name] != root or not borrowing[name]:
            continue  # not in the cohort tree, or not borrowing: never a candidate
        reclaim = pol.reclaim_within_cohort
        ok = reclaim == "Any" or (reclaim == "LowerPriority" and q < p)
        if ok and not within_nominal and not tenancy.fair_sharing:
            thr = pol.max_priority_threshold
            ok = pol.borrow_within_cohort == "LowerPriority" and q < p and (thr is None or q <= thr)
        if ok:
            others.append(rj)
    return sorted(own, key=_key), sorted(others, key=_key)


def quota_fits(ledger: QuotaLedger, tenancy: Tenancy, job: Job, flavor: str, borrow: bool) -> bool:
    """Does ``job`` fit the quota of ``flavor`` in ``ledger`` (borrowing allowed or not)?"""
    q_ = tenancy.tenant(job.tenant)
    assert q_ is not None
    q = q_.quota(flavor)
    used, g = ledger.used(job.tenant, flavor), job.total_gpus
    if not borrow and used + g > q.nominal:
        return False
    if q.borrowing_limit is not None and used + g > q.nominal + q.borrowing_limit:
        return False
    if q_.cohort is None:
        return used + g <= q.nominal
    return g <= ledger.available(("t", job.tenant), flavor)
