"""Kueue's classical preemption targets: which candidates, in which order, tried how.

From Kueue's preemption doc ("Targets") and its scheduler (kubernetes-sigs/kueue
pkg/scheduler/preemption/preemption.go ``classicalPreemptions``, classical/
hierarchical_preemption.go, classical/candidate_generator.go). A workload W of ClusterQueue X
asks v(f) GPUs on each flavor f it needs preemption on.

**Candidates** (running workloads or waiting reservations holding some f):

* X's own, satisfying ``withinClusterQueue`` (variant *within*);
* when X is in a cohort and ``reclaimWithinCohort`` is not Never: walking up from X's parent,
  at each ancestor A the workloads of queues in A's subtree, outside the subtree already
  walked, above their nominal quota on some f (and inside subtrees above their own quota),
  satisfying ``reclaimWithinCohort``. W has a *hierarchical advantage* over them when v fits
  X's nominal, or fits, level by level (r −= local_available), some subtree below A: then
  they are *hierarchical* (preemptible whatever their priority). Otherwise, with
  ``borrowWithinCohort`` Never, or a candidate priority ≥ W's, or above
  ``maxPriorityThreshold``, they are *without borrowing* (preemptible only if X then does not
  borrow), else *while borrowing*.

**Order**: hierarchical, then the other queues' (the "priority" candidates), then X's own; each
list by lower priority first, then most recently admitted (policies/kueue/candidates.py).

**Attempts** (borrowing allowed or not): only [borrowing] when no other queue has a candidate,
or when ``borrowWithinCohort`` is Never and X's usage is not below its nominal quota on every
f (usage < nominal, the request not counted); [no borrowing, borrowing] when
``borrowWithinCohort`` is Never and no candidate is hierarchical; else [borrowing, no
borrowing]. In each attempt, walk the candidates in order, skipping one whose queue (or any
cohort on its path up to where it was collected) is no longer above its quota once the
targets so far are gone, and, when borrowing, the *without borrowing* ones; stop at the first
prefix after which W fits (without borrowing: X's usage + v ≤ nominal too). Then fill back: in
reverse order from the second-to-last target, drop a target when W still fits without it. The
walk and the fill-back are the one victim search's ``grow`` and ``fill_back``
(policies/victims.py) with Kueue's candidate order, validity check and quota test.

**The oracle** (Kueue's ``SimulatePreemption``, what the flavor assigner asks per flavor): the
same search on quota alone — ``preempt`` when a target is X's own, ``reclaim`` when all belong
to other queues, ``none`` when there are no targets (NoCandidates).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gpufleet.engine.types import RunningJob
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.kueue.candidates import candidate_key, candidates, gpus_on, quota_fits
from gpufleet.policies.kueue.fair import fair_targets
from gpufleet.policies.kueue.tree import local_available, lowest_subtree_height
from gpufleet.policies.quota import Node, QuotaLedger
from gpufleet.policies.victims import VictimSearch

WITHIN_CQ = "within"
HIERARCHICAL = "hierarchical"
WITHOUT_BORROWING = "without-borrowing"
WHILE_BORROWING = "while-borrowing"

#: Kueue's preemption reason per variant (``PreemptionReason``).
REASON = {WITHIN_CQ: "InClusterQueue", HIERARCHICAL: "InCohortReclamation",
          WITHOUT_BORROWING: "InCohortReclamation", WHILE_BORROWING: "InCohortReclaimWhileBorrowing"}


@dataclass(frozen=True, slots=True)
class Candidate:
    rj: RunningJob
    variant: str
    #: The ancestor of X at which the candidate was collected (None for X's own).
    lca: Node | None = None


@dataclass(slots=True)
class Candidates:
    hierarchy: list[Candidate] = field(default_factory=list)
    priority: list[Candidate] = field(default_factory=list)
    own: list[Candidate] = field(default_factory=list)

    def ordered(self) -> list[Candidate]:
        return [*self.hierarchy, *self.priority, *self.own]


def satisfies(policy: str, preemptor: Job, cand: Job) -> bool:
    """Kueue's ``SatisfiesPreemptionPolicy``."""
    p, q = preemptor.priority, cand.priority
    if policy == "LowerPriority":
        return q < p
    if policy == "LowerOrNewerEqualPriority":
        return q < p or (q == p and preemptor.submit_time < cand.submit_time)
    return policy == "Any"


def within_nominal(ledger: QuotaLedger, node: Node, flavors: Iterable[str]) -> bool:
    """Kueue's ``IsWithinNominalInResources``: usage ≤ own quota (subtree) on every flavor."""
    return all(ledger.node_usage(node, f) <= ledger.node_capacity(node, f) for f in flavors)


def _fits_in_quota(ledger: QuotaLedger, node: Node, request: Mapping[str, int]
                   ) -> tuple[bool, dict[str, int]]:
    """Kueue's ``QuantitiesFitInQuota``: (request fits node's subtree, what is left of it
    beyond node's local quota)."""
    fits = all(ledger.node_capacity(node, f) >= ledger.node_usage(node, f) + v for f, v in request.items())
    return fits, {f: max(0, v - local_available(ledger, node, f)) for f, v in request.items()}


def classify(job: Job, request: Mapping[str, int], tenancy: Tenancy, ledger: QuotaLedger,
             base: QuotaLedger, live: Iterable[RunningJob],
             cache: dict[JobId, dict[str, int]] | None = None) -> Candidates:
    """W's candidates (module docstring). ``ledger``: usage with W's queue as it stands (its
    claim on quota); ``base``: the cycle's starting usage, which says who is borrowing."""
    queue = tenancy.tenant(job.tenant)
    assert queue is not None
    pol = queue.kueue
    # Only W's own queue and queues above their nominal quota on W's flavors can hold
    # candidates (a cohort above its quota has such a queue below it): look at their work only.
    eligible: dict[str, bool] = {}
    by_tenant: dict[str, list[RunningJob]] = {}
    for rj in live:
        name = rj.job.tenant
        ok = eligible.get(name)
        if ok is None:
            ok = eligible[name] = (pol.within_cluster_queue != "Never" if name == job.tenant else
                                   pol.reclaim_within_cohort != "Never"
                                   and not within_nominal(base, ("t", name), request))
        if ok and any(gpus_on(ledger, rj, f, cache) for f in request):
            by_tenant.setdefault(name, []).append(rj)
    out = Candidates()
    if pol.within_cluster_queue != "Never":
        out.own = [Candidate(rj, WITHIN_CQ) for rj in by_tenant.get(job.tenant, ())
                   if satisfies(pol.within_cluster_queue, job, rj.job)]
    me: Node = ("t", job.tenant)
    up = ledger.parent(me)
    if up is not None and pol.reclaim_within_cohort != "Never":
        advantage, remaining = _fits_in_quota(ledger, me, request)
        skip: Node | None = None
        while up is not None:
            found: list[RunningJob] = []
            _collect(ledger, base, up, skip, me, request, by_tenant, found)
            for rj in found:
                variant = _variant(job, rj.job, pol, advantage)
                if variant is not None:
                    (out.hierarchy if advantage else out.priority).append(Candidate(rj, variant, up))
            fits, remaining = _fits_in_quota(ledger, up, remaining)
            advantage = advantage or fits
            skip, up = up, ledger.parent(up)
    for lst in (out.hierarchy, out.priority, out.own):
        lst.sort(key=lambda c: candidate_key(c.rj))
    return out


def _collect(ledger: QuotaLedger, base: QuotaLedger, cohort: Node, skip: Node | None, me: Node,
             request: Mapping[str, int], by_tenant: dict[str, list[RunningJob]],
             found: list[RunningJob]) -> None:
    """Workloads of the queues under ``cohort`` (not under ``skip``, not W's) that are above
    their quota, in subtrees above theirs (Kueue's ``collectCandidatesInSubtree``)."""
    for child in ledger.children(cohort[1]):
        if child in (skip, me):
            continue
        if child[0] == "c":
            if not within_nominal(base, child, request):
                _collect(ledger, base, child, skip, me, request, by_tenant, found)
        elif not within_nominal(base, child, request):
            found.extend(by_tenant.get(child[1], ()))


def _variant(job: Job, cand: Job, pol, advantage: bool) -> str | None:
    if not satisfies(pol.reclaim_within_cohort, job, cand):
        return None
    if advantage:
        return HIERARCHICAL
    if pol.borrow_within_cohort == "Never":
        return WITHOUT_BORROWING
    thr = pol.max_priority_threshold
    if cand.priority >= job.priority or (thr is not None and cand.priority > thr):
        return WITHOUT_BORROWING
    return WHILE_BORROWING


def attempts(job: Job, request: Mapping[str, int], tenancy: Tenancy, ledger: QuotaLedger,
             cands: Candidates) -> tuple[bool, ...]:
    """The borrowing options Kueue tries, in order (module docstring)."""
    queue = tenancy.tenant(job.tenant)
    assert queue is not None
    forbidden = queue.kueue.borrow_within_cohort == "Never"
    under = all(ledger.used(job.tenant, f) < queue.quota(f).nominal for f in request)
    if not (cands.hierarchy or cands.priority) or (forbidden and not under):
        return (True,)
    if forbidden and not cands.hierarchy:
        return (False, True)
    return (True, False)


#: The victim search for one borrowing option: its ``allowed`` is Kueue's quota test with or
#: without borrowing, its ``fits`` the nodes (the preemptor) or nothing (the oracle).
Searches = Callable[[bool], VictimSearch]


def search(job: Job, request: Mapping[str, int], tenancy: Tenancy, ledger: QuotaLedger,
           base: QuotaLedger, cands: Candidates, searches: Searches
           ) -> tuple[list[Candidate], bool] | None:
    """(targets, borrowing) by Kueue's attempts and walk, or None: per attempt, the victim search
    grows over the candidates in Kueue's order, skipping the invalid ones, then fills back."""
    ordered = cands.ordered()
    of = {c.rj.job.id: c for c in ordered}
    groups = [[c.rj] for c in ordered]
    flavors = tuple(request)
    for borrow in attempts(job, request, tenancy, ledger, cands):
        trial = base.copy()

        def valid(chosen: list[RunningJob], rj: RunningJob, borrow: bool = borrow,
                  trial: QuotaLedger = trial) -> bool:
            """Kueue's ``candidateIsValid`` against ``trial`` (the targets so far removed): W's own
            queue's always; another queue's not while borrowing if it is *without borrowing*,
            nor once its queue (or a cohort up to where it was collected) is back within its
            quota. A valid candidate is taken: its usage leaves ``trial``."""
            c = of[rj.job.id]
            if rj.job.tenant != job.tenant:
                if borrow and c.variant == WITHOUT_BORROWING:
                    return False
                node: Node | None = ("t", rj.job.tenant)
                while node is not None and node != c.lca:
                    if within_nominal(trial, node, flavors):
                        return False
                    node = trial.parent(node)
            trial.charge_bindings(rj.job.tenant, rj.bindings, -1)
            return True

        vs = searches(borrow)
        found = vs.grow(groups, valid)
        if found is not None:
            return [of[rj.job.id] for rj in vs.fill_back(found[0])], borrow
    return None


def possibility(job: Job, flavor: str, tenancy: Tenancy, ledger: QuotaLedger,
                live: Iterable[RunningJob]) -> str:
    """``reclaim``, ``preempt`` or ``none`` (module docstring) for ``job`` on ``flavor``."""
    return possibility_and_level(job, flavor, tenancy, ledger, live)[0]


def possibility_and_level(job: Job, flavor: str, tenancy: Tenancy, ledger: QuotaLedger,
                          live: Iterable[RunningJob]) -> tuple[str, int]:
    """(``possibility``, the borrowing level once the targets are gone: Kueue's
    ``borrowAfterPreemptions``; with no targets, the level as things stand)."""
    if tenancy.fair_sharing:
        mode, victims = _fair_possibility(job, flavor, tenancy, ledger, live)
    else:
        request = {flavor: job.total_gpus}
        cands = classify(job, request, tenancy, ledger, ledger, live)
        found = search(job, request, tenancy, ledger, ledger, cands,
                       lambda borrow: _on_quota(ledger, tenancy, job, flavor, borrow))
        victims = [c.rj for c in found[0]] if found else []
        mode = ("none" if found is None else
                "preempt" if any(rj.job.tenant == job.tenant for rj in victims) else "reclaim")
    level = lowest_subtree_height(without(ledger, victims), job.tenant, flavor, job.total_gpus)[0]
    return mode, level


def _on_quota(ledger: QuotaLedger, tenancy: Tenancy, job: Job, flavor: str, borrow: bool
              ) -> VictimSearch[bool]:
    """The oracle's victim search: on quota alone, W fits once the targets are gone."""
    return VictimSearch(None, lambda: True, lambda gone: quota_fits(
        without(ledger, gone), tenancy, job, flavor, borrow))


def without(ledger: QuotaLedger, gone: Sequence[RunningJob]) -> QuotaLedger:
    """``ledger`` with the usage of ``gone`` removed (a copy)."""
    trial = ledger.copy()
    for rj in gone:
        trial.charge_bindings(rj.job.tenant, rj.bindings, -1)
    return trial


def _fair_possibility(job: Job, flavor: str, tenancy: Tenancy, ledger: QuotaLedger,
                      live: Iterable[RunningJob]) -> tuple[str, list[RunningJob]]:
    """With fair sharing, Kueue's oracle runs the fair-sharing targets on quota alone."""
    own, others = candidates(job, flavor, tenancy, ledger, live)
    if not own and not others:
        return "none", []
    found = fair_targets(job, {flavor: job.total_gpus}, tenancy, ledger, [*others, *own],
                         _on_quota(ledger, tenancy, job, flavor, True))
    if not found:
        return "none", []
    victims = [t.rj for t in found]
    return ("preempt" if any(rj.job.tenant == job.tenant for rj in victims) else "reclaim"), victims
