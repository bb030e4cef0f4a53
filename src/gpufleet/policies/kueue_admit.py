"""Kueue's admission, exactly: quota only, heads of queues, StrictFIFO or BestEffortFIFO.

What the ``kueue`` profile does in step 1 (admit) and 2 (order), from Kueue's concept docs
(ClusterQueue, Cohort, Fair Sharing; kubernetes-sigs/kueue site/content/en/docs/concepts):

* Each tenant is a ClusterQueue; its pending workloads are ordered by priority (high first),
  then creation (submit) time; with admission fair sharing, by their LocalQueue's decayed usage
  first (policies/kueue_afs.py), re-sorted after each admission (the entry penalty).
* A workload is admitted on the first of its queue's flavors where its GPUs fit the *unused
  quota*: usage + g ≤ nominal (no borrowing), or g ≤ what the cohort can lend within the
  borrowing limit (borrowing, QuotaLedger.available). With ``whenCanBorrow: TryNextFlavor`` a
  later flavor that fits without borrowing is preferred to borrowing on an earlier one.
  Unlike ours, nominal quota is not a promise of admission: when borrowers hold it, the
  workload stays pending until preemption frees the quota (policies/kueue_preemption.py).
* Queues are served by their heads: classic Kueue takes heads by *borrowing level* (0: fits
  the queue's nominal quota; k: the nearest ancestor cohort whose own subtree has room is k
  levels up, ``borrowing_level``), so a head borrowing inside its team's cohort goes before one
  that must borrow from the whole organisation; then higher priority, then older. With fair
  sharing, the head whose queue would have the lowest weighted share after admission.
  ``StrictFIFO``: a head that does not fit blocks its whole queue; ``BestEffortFIFO``: it
  steps aside and the next workload of the queue is tried.
* A head that does not fit holds quota for the rest of the cycle (Kueue's scheduler,
  ``reserveCapacityForUnreclaimablePreempt`` and the usage a preempting head adds): without
  borrowing, its queue's idle nominal quota, min(g, nominal − used); borrowing, up to its
  borrowing limit, min(g, nominal + limit − used). Later heads of the cycle — borrowers of
  other queues — cannot take it, so a lender's own head is not starved by borrowers that would
  arrive in the same cycle. Kueue skips the hold only when the queue can always reclaim
  (``reclaimWithinCohort: Any``) and has no preemption targets; we skip it when
  ``reclaimWithinCohort: Any`` and the head would borrow with no policy that could give it
  targets (no ``borrowWithinCohort``, ``withinClusterQueue: Never``, no fair sharing) — a head
  within nominal with ``Any`` always has targets while anyone borrows its quota.
* Weighted share (Kueue's DRS value) at every level of the cohort tree, with the queues' and
  the cohorts' weights: policies/kueue_share.py. Heads are compared at their common ancestor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import CycleContext, PendingJob, RunningJob
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.kueue_afs import AfsUsage
from gpufleet.policies.kueue_candidates import possibility, quota_fits
from gpufleet.policies.kueue_resources import ResourceLedger
from gpufleet.policies.kueue_share import share_path
from gpufleet.policies.quota import (
    UNKNOWN_TENANT,
    AdmissionBook,
    AdmissionRecord,
    QuotaLedger,
    _keep_admission_book,
    admission_book,
    with_flavor,
)

INSUFFICIENT_QUOTA = "InsufficientUnusedQuota"
STRICT_FIFO_BLOCKED = "StrictFIFOBlocked"


def borrowing_level(ledger: QuotaLedger, tenant: str, flavor: str, gpus: int) -> int:
    """Kueue's borrowing level of ``gpus`` more of ``flavor`` for ``tenant``: 0 when the queue's
    own nominal quota holds it; else k for the nearest ancestor cohort, k levels up, whose subtree
    (its own quota plus what its children may lend, policies/quota.py) holds the subtree's usage
    with the workload added; height + 1 when even the root does not."""
    trial = ledger.copy()
    trial.add(tenant, flavor, gpus)
    node: tuple[str, str] | None = ("t", tenant)
    level = 0
    while node is not None:
        if trial.node_usage(node, flavor) <= trial.node_capacity(node, flavor):
            return level
        node = trial.parent(node)
        level += 1
    return level


def _reachable(ledger: QuotaLedger, tenant: str, flavor: str) -> float:
    """The most GPUs of ``flavor`` a workload of ``tenant`` could hold if every other workload
    were gone: nominal without a cohort; else nominal + borrowing limit, capped by the root's
    subtree capacity."""
    t = ledger.tenancy.tenant(tenant)
    assert t is not None
    q = t.quota(flavor)
    if t.cohort is None:
        return q.nominal
    node: tuple[str, str] = ("t", tenant)
    while (up := ledger.parent(node)) is not None:
        node = up
    cap = ledger.node_capacity(node, flavor)
    return min(cap, q.nominal + q.borrowing_limit) if q.borrowing_limit is not None else cap


def reservation(ledger: QuotaLedger, job: Job, fair_sharing: bool, flavor: str | None = None
                ) -> tuple[str, int] | None:
    """(flavor, GPUs) a head that does not fit holds for the rest of the cycle (module
    docstring), or None; on ``flavor`` when the flavor assigner chose one."""
    t = ledger.tenancy.tenant(job.tenant)
    if t is None or job.total_gpus == 0:
        return None
    g = job.total_gpus
    for f in ([flavor] if flavor else ledger.candidate_flavors(job)):
        q = t.quota(f)
        used = ledger.used(job.tenant, f)
        if g > _reachable(ledger, t.name, f):
            continue  # Kueue's NoFit: no preemption could make room, nothing to hold
        if used + g <= q.nominal:
            return (f, g)
        pol = t.kueue
        if pol.reclaim_within_cohort == "Any" and not fair_sharing and pol.borrow_within_cohort == "Never" \
                and pol.within_cluster_queue == "Never":
            return None
        hold = g if q.borrowing_limit is None else min(g, q.nominal + q.borrowing_limit - used)
        return (f, hold) if hold > 0 else None
    return None


#: Kueue's granular modes, worst to best (flavorassigner: noFit, noPreemptionCandidates,
#: preempt, reclaim, fit).
MODE_RANK = {"nofit": 0, "none": 1, "preempt": 2, "reclaim": 3, "fit": 4}


def assign_flavor(ledger: QuotaLedger, job: Job, res: ResourceLedger | None,
                  live: list[RunningJob]) -> tuple[str | None, str, bool]:
    """Kueue's flavor assigner with flavor fungibility: (flavor, mode, borrows).

    Flavors are tried in the queue's order; on each, the mode is ``fit`` (the unused quota
    holds it, borrowing or not), else what preemption could do (``reclaim``: other queues'
    borrowed quota only; ``preempt``: the queue's own work too; ``none``: no candidates; the
    quota oracle of policies/kueue_candidates.py), or ``nofit`` (beyond what the queue could
    ever hold). The search stops on a flavor (Kueue's shouldTryNextFlavor) when it fits
    without borrowing; fits by borrowing and ``whenCanBorrow: Borrow``; or needs preemption,
    ``whenCanPreempt: Preempt`` and either no borrowing or ``whenCanBorrow: Borrow``.
    Otherwise the best flavor seen wins (isPreferred, preference unset = Kueue's default:
    the better mode, then the lower borrowing level; ties keep the earlier flavor). With one
    flavor there is no choice to make and the oracle is not consulted (mode ``none``)."""
    t = ledger.tenancy.tenant(job.tenant)
    assert t is not None
    pol, g = t.kueue, job.total_gpus
    flavors = ledger.candidate_flavors(job)
    best: tuple[str | None, str, bool] = (None, "nofit", False)
    best_level = math.inf
    for f in flavors:
        borrows = ledger.used(job.tenant, f) + g > t.quota(f).nominal
        refused = res is not None and res.refusal(job, f, borrows) is not None
        if quota_fits(ledger, ledger.tenancy, job, f, borrow=True) and not refused:
            mode = "fit"
        elif g > _reachable(ledger, t.name, f) or refused:
            mode = "nofit"
        elif len(flavors) == 1:
            mode = "none"
        else:
            mode = possibility(job, f, ledger.tenancy, ledger, live)
        if mode == "fit" and (not borrows or pol.when_can_borrow == "Borrow"):
            return f, mode, borrows
        if mode in ("preempt", "reclaim") and pol.when_can_preempt == "Preempt" and (
                not borrows or pol.when_can_borrow == "Borrow"):
            return f, mode, borrows
        if mode == "nofit":
            continue
        level = borrowing_level(ledger, job.tenant, f, g) if borrows else 0
        if MODE_RANK[mode] > MODE_RANK[best[1]] or (mode == best[1] and level < best_level):
            best, best_level = (f, mode, borrows), level
    return best


def assign_pod_sets(ledger: QuotaLedger, job: Job, res: ResourceLedger | None
                    ) -> list[tuple[int, str, bool]] | None:
    """Kueue assigns flavors per pod set: each GPU-asking pod set, in order, takes the flavor
    the assigner picks for it alone (fit modes only, whenCanBorrow as for a whole workload), with
    the pod sets before it already counted. [(pod set index, flavor, borrows)] when every pod set
    fits this way, else None. Only consulted for workloads of two or more GPU pod sets."""
    trial = ledger.copy()
    rtrial = res.copy() if res is not None else None
    out: list[tuple[int, str, bool]] = []
    for i, ps in enumerate(job.pod_sets):
        if ps.request.gpus == 0:
            continue
        part = replace(job, pod_sets=(ps,))
        flavor, borrows = kueue_flavor(trial, part, rtrial)
        if flavor is None:
            return None
        trial.add(job.tenant, flavor, part.total_gpus)
        if rtrial is not None:
            rtrial.add_job(part, flavor)
        out.append((i, flavor, borrows))
    return out


def pin_pod_sets(job: Job, assignment: list[tuple[int, str, bool]]) -> Job:
    """``job`` with each assigned pod set pinned to its flavor."""
    flavor_of = {i: f for i, f, _ in assignment}
    sets = tuple(replace(ps, request=replace(ps.request, gpu_models=(flavor_of[i],)))
                 if i in flavor_of else ps for i, ps in enumerate(job.pod_sets))
    return replace(job, pod_sets=sets)


def kueue_flavor(ledger: QuotaLedger, job: Job, res: ResourceLedger | None = None
                 ) -> tuple[str | None, bool]:
    """(flavor, borrows) where ``job`` fits the unused quota now, or (None, False). Every
    covered resource must fit (GPUs here, cpu and memory in ``res``, policies/kueue_resources.py)."""
    t = ledger.tenancy.tenant(job.tenant)
    assert t is not None
    g = job.total_gpus
    borrow_at: str | None = None
    for f in ledger.candidate_flavors(job):
        q = t.quota(f)
        used = ledger.used(job.tenant, f)
        fits_cohort = g <= ledger.available(("t", job.tenant), f) if t.cohort else used + g <= q.nominal
        if used + g <= q.nominal and fits_cohort and (res is None or res.refusal(job, f, False) is None):
            return f, False
        within_limit = q.borrowing_limit is None or used + g <= q.nominal + q.borrowing_limit
        if res is not None and res.refusal(job, f, True) is not None:
            continue
        if t.cohort and within_limit and fits_cohort and borrow_at is None:
            if t.kueue.when_can_borrow == "Borrow":
                return f, True
            borrow_at = f
    return (borrow_at, True) if borrow_at is not None else (None, False)


class KueueAdmitter:
    """Kueue's admission (module docstring); records go to the cycle's AdmissionBook like ours,
    so the Kueue preemptor reads the same hand-off."""

    name = "kueue-admission"

    def records(self, ctx: CycleContext) -> list[AdmissionRecord]:
        return admission_book(ctx).records

    def admit(self, pending: Sequence[PendingJob], ctx: CycleContext) -> list[PendingJob]:
        tenancy: Tenancy | None = ctx.tenancy
        if tenancy is None:
            return list(pending)
        ledger = QuotaLedger.from_running(tenancy, ctx.running)
        res = ResourceLedger.from_running(tenancy, ctx.running)
        queues: dict[str, list[PendingJob]] = {}
        records: list[AdmissionRecord] = []
        for pj in pending:
            if tenancy.tenant(pj.job.tenant) is None:
                why = (UNKNOWN_TENANT, f"no ClusterQueue for tenant {pj.job.tenant!r}")
                ctx.statuses.record(pj.job.id, Status(StatusCode.NOT_ADMITTED, why, self.name))
                records.append(AdmissionRecord(pj, False, "", why[0]))
                continue
            queues.setdefault(pj.job.tenant, []).append(pj)
        afs = AfsUsage(tenancy, ctx.usage, ctx.running, ctx.now) if any(
            t.kueue.admission_fair_sharing for t in tenancy.tenants) else None
        for name, q in queues.items():
            if afs is not None and self._afs(tenancy, name):
                q.sort(key=lambda p: afs.key(p.job))
            else:
                q.sort(key=lambda p: (-p.job.priority, p.job.submit_time, p.job.id))
        heads = {t: 0 for t in queues}
        # Each head's key changes only when quota is charged (an admission) or when that queue's
        # head moves on: recompute all keys after an admission, one key after a refusal.
        keys = {t: self._head_key(queues[t][0], ledger, res, tenancy) for t in heads}
        admitted: list[PendingJob] = []
        live = [rj for rj in ctx.running if not rj.evicting]
        holding: set[str] = set()
        holds: dict[str, tuple[str, int]] = {}
        hold_for: dict[str, tuple[Job, str | None]] = {}
        # (queue, candidate flavors) → fewest GPUs refused this cycle. GPU quota only grows within
        # a cycle (admissions and holds are charged, nothing is released), so a later workload of
        # the queue asking as many GPUs or more on the same flavors is refused too, without the
        # flavor search: what kept a congested week of the kueue profile slow.
        refused: dict[tuple[str, tuple[str, ...]], int] = {}
        rank = 0
        while heads:
            held = False
            tenant = min(heads, key=keys.__getitem__)
            pj = queues[tenant][heads[tenant]]
            job = pj.job
            own_hold = holds.get(tenant)
            if own_hold is not None:  # a queue's hold keeps others out, not its own workloads
                ledger.add(tenant, own_hold[0], -own_hold[1])
            flavor, mode, borrows = assign_flavor(ledger, job, res, live)
            split = None
            if sum(1 for ps in job.pod_sets if ps.request.gpus) > 1:
                split = assign_pod_sets(ledger, job, res)
                if split is not None and len({f for _, f, _ in split}) > 1:
                    flavor, mode, borrows = split[0][1], "fit", any(b for _, _, b in split)
                else:
                    split = None  # one flavor for all: the whole-workload assignment stands
            chosen: str | None = None
            if mode != "fit":
                chosen, flavor = flavor, None
            if split is not None:
                pinned = pin_pod_sets(job, split)
                for i, f, _ in split:
                    part = replace(job, pod_sets=(job.pod_sets[i],))
                    ledger.add(job.tenant, f, part.total_gpus)
                    res.add_job(part, f)
            elif flavor is not None:
                pinned = with_flavor(job, flavor) if job.total_gpus else job
                ledger.add(job.tenant, flavor, job.total_gpus)
                res.add_job(job, flavor)
            if flavor is not None:
                admitted.append(PendingJob(pinned, pj.bound))
                records.append(AdmissionRecord(admitted[-1], True, flavor, tier=int(borrows), rank=rank))
                if afs is not None and self._afs(tenancy, tenant):
                    afs.admitted(job)  # the entry penalty reorders what is left of the queue
                    later = queues[tenant][heads[tenant] + 1:]
                    later.sort(key=lambda p: afs.key(p.job))
                    queues[tenant][heads[tenant] + 1:] = later
                if own_hold is not None:  # the head's hold shrinks to what its queue still has idle
                    hjob, hflavor = hold_for[tenant]
                    own_hold = self._hold(ledger, hjob, tenancy, hflavor, "", live)
                    if own_hold is None:
                        del holds[tenant]
                    else:
                        holds[tenant] = own_hold
            else:
                cands = ledger.candidate_flavors(job)
                why = (INSUFFICIENT_QUOTA, f"ClusterQueue {tenant!r}: insufficient unused quota for "
                       f"{job.total_gpus} GPUs in flavor(s) {', '.join(cands) or '-'}")
                ctx.statuses.record(job.id, Status(StatusCode.NOT_ADMITTED, why, self.name))
                # The flavor the assigner chose is where the preemptor looks for targets.
                records.append(AdmissionRecord(pj, False, chosen or (cands[0] if cands else ""), why[0],
                                               rank=rank))
                if job.total_gpus:
                    key = (tenant, cands)
                    refused[key] = min(job.total_gpus, refused.get(key, job.total_gpus))
                # One head per ClusterQueue per Kueue cycle: only the queue's first refused
                # workload holds quota (holds do not pile up behind it).
                if tenant not in holding:
                    holding.add(tenant)
                    hold = self._hold(ledger, job, tenancy, chosen, mode, live)
                    if hold is not None:
                        holds[tenant] = own_hold = hold
                        hold_for[tenant] = (job, chosen)
                        held = True
            if own_hold is not None:
                ledger.add(tenant, own_hold[0], own_hold[1])
            if flavor is None:
                queue = tenancy.tenant(tenant)
                if queue is not None and queue.kueue.queueing_strategy == "StrictFIFO":
                    for rest in queues[tenant][heads[tenant] + 1:]:
                        why2 = (STRICT_FIFO_BLOCKED, f"StrictFIFO: behind the head of ClusterQueue "
                                f"{tenant!r}, {job.id}, which does not fit")
                        ctx.statuses.record(rest.job.id, Status(StatusCode.NOT_ADMITTED, why2, self.name))
                        records.append(AdmissionRecord(rest, False, "", why2[0], rank=rank))
                    del heads[tenant]
                    rank += 1
                    if held:
                        for t in heads:
                            keys[t] = self._key(queues[t][heads[t]], ledger, res, tenancy, holds.get(t))
                    continue
            rank += 1
            heads[tenant] += 1
            rank = self._skip_refused(queues[tenant], heads, tenant, refused, ledger, ctx, records, rank)
            if heads[tenant] >= len(queues[tenant]):
                del heads[tenant]
            for t in (heads if flavor is not None or held else (tenant,) if tenant in heads else ()):
                keys[t] = self._key(queues[t][heads[t]], ledger, res, tenancy, holds.get(t))
        _keep_admission_book(ctx, AdmissionBook(records))
        order = {pj.job.id: i for i, pj in enumerate(pending)}
        return sorted(admitted, key=lambda p: order[p.job.id])  # who, not in which order

    def _skip_refused(self, queue: list[PendingJob], heads: dict[str, int], tenant: str,
                      refused: dict[tuple[str, tuple[str, ...]], int], ledger: QuotaLedger,
                      ctx: CycleContext, records: list[AdmissionRecord], rank: int) -> int:
        """Refuse, without a flavor search, the workloads at the queue's head that ask at least
        as many GPUs as one already refused on the same flavors (GPU quota only: with cpu or
        memory quota, demand is not monotone in GPUs). Returns the next rank."""
        t = ledger.tenancy.tenant(tenant)
        if t is None or t.resources:
            return rank
        while heads[tenant] < len(queue):
            pj = queue[heads[tenant]]
            cands = ledger.candidate_flavors(pj.job)
            least = refused.get((tenant, cands))
            if least is None or pj.job.total_gpus < least or pj.job.total_gpus == 0 or sum(
                    1 for ps in pj.job.pod_sets if ps.request.gpus) > 1:
                break  # (pod sets that may land on different flavors are assigned in full)
            why = (INSUFFICIENT_QUOTA, f"ClusterQueue {tenant!r}: insufficient unused quota for "
                   f"{pj.job.total_gpus} GPUs in flavor(s) {', '.join(cands) or '-'}")
            ctx.statuses.record(pj.job.id, Status(StatusCode.NOT_ADMITTED, why, self.name))
            records.append(AdmissionRecord(pj, False, cands[0] if cands else "", why[0], rank=rank))
            rank += 1
            heads[tenant] += 1
        return rank

    @staticmethod
    def _afs(tenancy: Tenancy, name: str) -> bool:
        t = tenancy.tenant(name)
        return t is not None and t.kueue.admission_fair_sharing

    @staticmethod
    def _hold(ledger: QuotaLedger, job: Job, tenancy: Tenancy, flavor: str | None, mode: str,
              live: list[RunningJob]) -> tuple[str, int] | None:
        """What a refused head keeps from later heads this cycle. With preemption targets Kueue
        charges the head's whole request (``cq.AddUsage``; it preempts and is admitted once the
        victims leave), else the reservation of ``reservation``."""
        if job.total_gpus == 0:
            return None
        f = flavor or next(iter(ledger.candidate_flavors(job)), None)
        if f is None or job.total_gpus > _reachable(ledger, job.tenant, f):
            return None
        if mode not in ("reclaim", "preempt"):
            mode = possibility(job, f, tenancy, ledger, live)
        if mode in ("reclaim", "preempt"):
            return (f, job.total_gpus)
        return reservation(ledger, job, tenancy.fair_sharing, f)

    def _key(self, pj: PendingJob, ledger: QuotaLedger, res: ResourceLedger, tenancy: Tenancy,
             hold: tuple[str, int] | None) -> tuple:
        """The head's key, seen without its own queue's hold."""
        if hold is None:
            return self._head_key(pj, ledger, res, tenancy)
        ledger.add(pj.job.tenant, hold[0], -hold[1])
        try:
            return self._head_key(pj, ledger, res, tenancy)
        finally:
            ledger.add(pj.job.tenant, hold[0], hold[1])

    @staticmethod
    def _head_key(pj: PendingJob, ledger: QuotaLedger, res: ResourceLedger, tenancy: Tenancy) -> tuple:
        job = pj.job
        if tenancy.fair_sharing:
            flavor, _ = kueue_flavor(ledger, job, res)
            shares = share_path(ledger, job.tenant, (flavor, job.total_gpus) if flavor else None)
            return (shares, -job.priority, job.submit_time, job.id)
        flavor, borrows = kueue_flavor(ledger, job, res)
        level = borrowing_level(ledger, job.tenant, flavor, job.total_gpus) if borrows and flavor else 0
        return (level, -job.priority, job.submit_time, job.id)


class KueueOrder:
    """Kueue's head order: the order in which admission served the queues' heads (recorded as
    each record's rank), which is the order placement tries the admitted workloads."""

    name = "kueue-head-order"

    def order(self, admitted: Sequence[PendingJob], ctx: CycleContext) -> list[PendingJob]:
        rank = {r.pending.job.id: r.rank for r in admission_book(ctx).records}
        return sorted(admitted, key=lambda p: rank.get(p.job.id, len(rank)))
