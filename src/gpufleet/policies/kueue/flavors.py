"""Kueue's flavor assigner: which flavor (and mode) a workload, or each of its pod sets, takes.

Split from policies/kueue/admit.py (admission uses it to pick flavors, order heads and size what a
refused head keeps); the rules are in kueue/admit.py's docstring and docs/kueue.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from gpufleet.engine.status import Shortfall
from gpufleet.engine.types import RunningJob
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.kueue.candidates import quota_fits
from gpufleet.policies.kueue.fair import Entry, entry
from gpufleet.policies.kueue.resources import ResourceLedger
from gpufleet.policies.kueue.targets import possibility, possibility_and_level
from gpufleet.policies.kueue.tree import lowest_subtree_height, may_preempt, potential_available
from gpufleet.policies.quota import QuotaLedger, quota_key


def borrowing_level(ledger: QuotaLedger, tenant: str, flavor: str, gpus: int) -> int:
    """Kueue's borrowing level of ``gpus`` more of ``flavor`` for ``tenant``: 0 when the queue's
    own nominal quota holds them, else the height of the lowest subtree of the cohort tree that
    does (policies/kueue/tree.py, Kueue's ``FindHeightOfLowestSubtreeThatFits``)."""
    return lowest_subtree_height(ledger, tenant, flavor, gpus)[0]


def reachable(ledger: QuotaLedger, tenant: str, flavor: str) -> float:
    """The most GPUs of ``flavor`` a workload of ``tenant`` could hold if every other workload
    were gone (Kueue's ``PotentialAvailable``, policies/kueue/tree.py)."""
    return potential_available(ledger, ("t", tenant), flavor)


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
        if g > reachable(ledger, t.name, f):
            continue  # Kueue's NoFit: no preemption could make room, nothing to hold
        if used + g <= q.nominal:
            return (f, g)
        if t.kueue.reclaim_within_cohort == "Any":
            return None  # Kueue's CanAlwaysReclaim: no reservation for a head without targets
        hold = g if q.borrowing_limit is None else min(g, q.nominal + q.borrowing_limit - used)
        return (f, hold) if hold > 0 else None
    return None


#: Kueue's granular modes, worst to best (flavorassigner: noFit, noPreemptionCandidates,
#: preempt, reclaim, fit).
MODE_RANK = {"nofit": 0, "none": 1, "preempt": 2, "reclaim": 3, "fit": 4}


def preferred(mode: str, level: float, best_mode: str, best_level: float, preference: str | None) -> bool:
    """Kueue's ``isPreferred``: a flavor without preemption candidates ranks below any viable
    one; then ``PreemptionOverBorrowing`` takes the lower borrowing level before the better
    mode, and the default (``BorrowingOverPreemption``) the better mode before the level."""
    if best_mode == "nofit":
        return True
    if (mode == "none") != (best_mode == "none"):
        return best_mode == "none"
    if preference == "PreemptionOverBorrowing":
        if level != best_level:
            return level < best_level
        return MODE_RANK[mode] > MODE_RANK[best_mode]
    if mode != best_mode:
        return MODE_RANK[mode] > MODE_RANK[best_mode]
    return level < best_level


def assign_flavor(ledger: QuotaLedger, job: Job, res: ResourceLedger | None,
                  live: list[RunningJob]) -> tuple[str | None, str, bool]:
    """Kueue's flavor assigner with flavor fungibility: (flavor, mode, borrows).

    Flavors are tried in the queue's order; on each, the mode is ``fit`` (the unused quota
    holds it, borrowing or not), else what preemption could do (``reclaim``: other queues'
    borrowed quota only; ``preempt``: the queue's own work too; ``none``: no candidates; the
    quota oracle of policies/kueue/candidates.py), or ``nofit`` (beyond what the queue could
    ever hold, or not allowed to preempt: policies/kueue/tree.may_preempt). The search stops
    on a flavor (Kueue's shouldTryNextFlavor) when it fits without borrowing; fits by
    borrowing and ``whenCanBorrow: Borrow``; or needs preemption, ``whenCanPreempt: Preempt``
    and either no borrowing or ``whenCanBorrow: Borrow``.
    Otherwise the best flavor seen wins (``preferred``: Kueue's isPreferred with the queue's
    ``preference``; ties keep the earlier flavor). With one
    flavor there is no choice to make and the oracle is not consulted (mode ``none``)."""
    t = ledger.tenancy.tenant(job.tenant)
    assert t is not None
    pol, g = t.kueue, job.total_gpus
    flavors = ledger.candidate_flavors(job)
    best: tuple[str | None, str, bool] = (None, "nofit", False)
    best_level = math.inf
    for f in flavors:
        borrows = ledger.used(job.tenant, f) + g > t.quota(f).nominal
        after = 0
        refused = res is not None and res.refusal(job, f, borrows) is not None
        if quota_fits(ledger, ledger.tenancy, job, f, borrow=True) and not refused:
            mode = "fit"
        elif (g > reachable(ledger, t.name, f) or refused
              or not may_preempt(ledger, ledger.tenancy, t.name, f, g)):
            mode = "nofit"
        elif len(flavors) == 1:
            mode = "none"
        else:
            mode, after = possibility_and_level(job, f, ledger.tenancy, ledger, live)
        if mode == "fit" and (not borrows or pol.when_can_borrow == "Borrow"):
            return f, mode, borrows
        if mode in ("preempt", "reclaim") and pol.when_can_preempt == "Preempt" and (
                after == 0 or pol.when_can_borrow == "Borrow"):
            return f, mode, borrows
        if mode == "nofit":
            continue
        if mode in ("fit", "none"):
            level = borrowing_level(ledger, job.tenant, f, g) if borrows else 0
        else:
            level = after  # Kueue's borrowAfterPreemptions
        if preferred(mode, level, best[1], best_level, pol.preference):
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


def assign_pod_sets_modes(ledger: QuotaLedger, job: Job, res: ResourceLedger | None,
                          live: list[RunningJob]) -> list[tuple[int, str, str, bool]] | None:
    """Kueue's assignment per pod set when some pod set does not fit: each GPU pod set, in
    order, takes the flavor and mode the assigner (``assign_flavor``) gives it alone, with the
    pod sets before it counted on their flavors whatever their mode (Kueue's assigner adds each
    pod set's usage before the next). [(pod set index, flavor, mode, borrows)], or None when a
    pod set fits no flavor at all (NoFit: preemption cannot help)."""
    trial = ledger.copy()
    rtrial = res.copy() if res is not None else None
    out: list[tuple[int, str, str, bool]] = []
    for i, ps in enumerate(job.pod_sets):
        if ps.request.gpus == 0:
            continue
        part = replace(job, pod_sets=(ps,))
        flavor, mode, borrows = assign_flavor(trial, part, rtrial, live)
        if flavor is None or mode == "nofit":
            return None
        trial.add(job.tenant, flavor, part.total_gpus)
        if rtrial is not None:
            rtrial.add_job(part, flavor)
        out.append((i, flavor, mode, borrows))
    return out


def worst_mode(modes: Iterable[str]) -> str:
    """A workload's representative mode: its worst pod set's (Kueue's RepresentativeMode)."""
    return min(modes, key=MODE_RANK.__getitem__)


def pin_pod_sets(job: Job, assignment: list[tuple[int, str, bool]]) -> Job:
    """``job`` with each assigned pod set pinned to its flavor."""
    flavor_of = {i: f for i, f, _ in assignment}
    sets = tuple(replace(ps, request=replace(ps.request, gpu_models=(flavor_of[i],)))
                 if i in flavor_of else ps for i, ps in enumerate(job.pod_sets))
    return replace(job, pod_sets=sets)


def kueue_flavor(ledger: QuotaLedger, job: Job, res: ResourceLedger | None = None
                 ) -> tuple[str | None, bool]:
    """(flavor, borrows) where ``job`` fits the unused quota now, or (None, False). Every
    covered resource must fit (GPUs here, cpu and memory in ``res``, policies/kueue/resources.py)."""
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


def assign_group(ledger: QuotaLedger, tenant: str, flavors: Sequence[str], demand: Mapping[str, int]
                 ) -> tuple[str | None, bool, tuple[Shortfall, ...]]:
    """Kueue's flavor assigner for one resource group's ``demand`` (resource → amount, every
    resource on one ledger: ``quota_key``), as ``kueue_flavor`` is for a job's GPUs: over
    ``flavors`` in order, the first where every resource fits without borrowing; one where they
    fit only by borrowing is taken at once with ``whenCanBorrow: Borrow``, and with
    ``TryNextFlavor`` only when no later flavor fits without. (flavor, borrows, ()), or (None,
    False, every flavor's shortfalls in order) when none fits."""
    t = ledger.tenancy.tenant(tenant)
    borrow_at: str | None = None
    short: list[Shortfall] = []
    for f in flavors:
        lacks = ledger.shortfalls(tenant, f, demand)
        if lacks:
            short += lacks
            continue
        if all(ledger.within_nominal(tenant, quota_key(f, r), d) for r, d in demand.items()):
            return f, False, ()
        if t is None or t.kueue.when_can_borrow != "TryNextFlavor":
            return f, True, ()
        borrow_at = borrow_at or f
    return (borrow_at, True, ()) if borrow_at is not None else (None, False, tuple(short))


# -- nomination and the flavor scan across cycles ---------------------------------------------

@dataclass(frozen=True, slots=True)
class Nomination:
    """A head's assignment at nomination (Kueue's ``nominate``, on the state when it became
    head): ``assignment`` is ``assign_flavor``'s (flavor, mode, borrows); ``resume`` is where the
    next cycle's scan starts if it is skipped (None: from the first flavor)."""

    job: JobId
    assignment: tuple[str | None, str, bool]
    resume: int | None

    @property
    def fit(self) -> str | None:
        """The flavor it fits at nomination, or None."""
        flavor, mode, _ = self.assignment
        return flavor if mode == "fit" else None


def nominate(ledger: QuotaLedger, job: Job, res: ResourceLedger | None,
             live: list[RunningJob]) -> Nomination:
    """Kueue's flavor assigner for a head being nominated. ``resume``: Kueue records the index of
    the last flavor its scan tried (``TriedFlavorIdx``): the flavor it stopped on when it fits
    there without borrowing, or borrowing with ``whenCanBorrow: Borrow``, or -1 when the scan ran
    to the last flavor; the next cycle starts one after it (``NextFlavorToTryForPodSetResource``).
    Kept for workloads with one GPU pod set (Kueue keeps one index per pod set and resource)."""
    flavor, mode, borrows = assign_flavor(ledger, job, res, live)
    t = ledger.tenancy.tenant(job.tenant)
    assert t is not None
    resume = None
    if mode == "fit" and flavor is not None and (not borrows or t.kueue.when_can_borrow == "Borrow"):
        order = [f for f, _ in t.quotas]
        idx = order.index(flavor)
        if idx < len(order) - 1 and sum(1 for ps in job.pod_sets if ps.request.gpus) == 1:
            resume = idx + 1
    return Nomination(job.id, (flavor, mode, borrows), resume)


def still_fits(ledger: QuotaLedger, job: Job, res: ResourceLedger | None, flavor: str) -> bool:
    """Kueue's check when a nominated head's turn comes (``cq.Fits`` of its assignment's usage):
    every covered resource still fits ``flavor`` after the heads admitted before it."""
    if not quota_fits(ledger, ledger.tenancy, job, flavor, borrow=True):
        return False
    t = ledger.tenancy.tenant(job.tenant)
    assert t is not None
    borrows = ledger.used(job.tenant, flavor) + job.total_gpus > t.quota(flavor).nominal
    return res is None or res.refusal(job, flavor, borrows) is None


def resume_scan(ledger: QuotaLedger, job: Job, start: int) -> Job | None:
    """``job`` allowed only its queue's flavors from index ``start`` on (Kueue resumes the scan
    of a workload skipped last cycle after the flavor it was nominated on:
    FlavorFungibilityPreserveScanProgress, beta and on by default since v0.20); None when none
    of its flavors is left (Kueue finds no fit this cycle, and starts from the first next)."""
    t = ledger.tenancy.tenant(job.tenant)
    if t is None:
        return job
    later = {f for f, _ in t.quotas[start:]}
    allowed = tuple(f for f in ledger.candidate_flavors(job) if f in later)
    if not allowed:
        return None
    sets = tuple(replace(ps, request=replace(ps.request, gpu_models=allowed)) if ps.request.gpus else ps
                 for ps in job.pod_sets)
    return replace(job, pod_sets=sets)


def refused_hold(ledger: QuotaLedger, job: Job, tenancy: Tenancy, flavor: str | None, mode: str,
                 live: list[RunningJob]) -> tuple[str, int] | None:
    """What a refused head keeps from later heads this cycle. With preemption targets Kueue
    charges the head's whole request (``cq.AddUsage``; it preempts and is admitted once the
    victims leave), else the reservation of ``reservation``."""
    if job.total_gpus == 0:
        return None
    f = flavor or next(iter(ledger.candidate_flavors(job)), None)
    if f is None or job.total_gpus > reachable(ledger, job.tenant, f):
        return None
    if mode not in ("reclaim", "preempt"):
        mode = possibility(job, f, tenancy, ledger, live)
    if mode in ("reclaim", "preempt"):
        return (f, job.total_gpus)
    return reservation(ledger, job, tenancy.fair_sharing, f)


def head_key(ledger: QuotaLedger, job: Job, res: ResourceLedger, tenancy: Tenancy) -> tuple | Entry:
    """The order of heads. Classic: (borrowing level, priority, age, id), the lowest first. Fair
    sharing: the head's shares with it admitted, for the tournament (policies/kueue/fair.py)."""
    flavor, borrows = kueue_flavor(ledger, job, res)
    if tenancy.fair_sharing:
        return entry(ledger, job, flavor)
    level = borrowing_level(ledger, job.tenant, flavor, job.total_gpus) if borrows and flavor else 0
    return (level, -job.priority, job.submit_time, job.id)
