"""Kueue's fair sharing: the admission tournament and fair-sharing preemption.

From Kueue's "Fair Sharing" concept doc, KEP-1714 and its scheduler (kubernetes-sigs/kueue
pkg/scheduler/fair_sharing_iterator.go, pkg/scheduler/preemption/preemption.go
``fairPreemptions``, pkg/scheduler/preemption/fairsharing/*). Shares are Kueue's DRS
(policies/kueue/share.py), taken with the workload in question added to its queue.

**Tournament** (which head is admitted next): each head's DRS is computed for its queue and
every cohort on its path with it admitted. From the root down, each cohort nominates one head
among its child cohorts' nominees and its queues' heads; at cohort c, the head whose node
under c is not borrowing on the head's flavors wins (``FairSharingPrioritizeNonBorrowing``),
then the lower DRS of that node, then the higher priority, then the earlier submission.
Queues in different cohort trees (or in none) are not ordered by Kueue (a map walk); ours
takes the root nominees by priority, then age, then queue name.

**Preemption** of a workload W of queue X (``LessThanOrEqualToFinalShare`` S2-a,
``LessThanInitialShare`` S2-b), with W's usage added to X first:

* Target queues come from the ordering: from the root, at each cohort, the child with the
  highest DRS among queues that still have candidates and are borrowing (X always counts while
  it has candidates) and cohorts that are borrowing or on X's path; a cohort wins ties with a
  queue, and two queues tie-break by their first candidates (other queues' first, lower
  priority, newer). Re-evaluated after every eviction.
* X's own candidates are taken as they come (InClusterQueue). When X with W is within its
  nominal quota on W's flavors (``FairSharingPreemptWithinNominal``, on by default), every
  other queue's candidate is taken as it comes (InCohortReclamation). Otherwise the shares are
  compared at the almost-LCA — the two children of the lowest common cohort on X's and Y's
  paths: the first strategy takes Y's first candidate U that passes (InCohortFairSharing) and
  re-picks the queue; the ones that fail are kept. If W still does not fit and a second
  strategy is configured, S2-b runs over the kept candidates: per queue in the ordering, its
  first one, if X's side is below Y's; then the queue is dropped.
* Targets that make W fit are filled back as in classical preemption (from the second to last).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from gpufleet.engine.types import RunningJob
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.kueue.share import NEGATIVE, Drs, add_request, drs, release
from gpufleet.policies.quota import Node, QuotaLedger
from gpufleet.policies.victims import VictimSearch


def _strategy_passes(name: str, new_p: Drs, old_t: Drs, new_t: Drs) -> bool:
    if name == "LessThanOrEqualToFinalShare":
        return new_p.key() <= new_t.key()
    return new_p.key() < old_t.key()


def _first_key(rj: RunningJob, me: str) -> tuple:
    """Kueue's ``CandidatesOrdering`` without eviction marks: other queues first, lower
    priority, more recently admitted, id."""
    return (rj.job.tenant == me, rj.job.priority, -rj.start_time, rj.job.id)


class _Ordering:
    """Kueue's ``TargetClusterQueueOrdering`` over ``trial`` (which the caller mutates)."""

    def __init__(self, trial: QuotaLedger, me: str, cands: Sequence[RunningJob]) -> None:
        self.trial, self.me = trial, me
        self.lists: dict[str, list[RunningJob]] = {}
        for rj in cands:
            self.lists.setdefault(rj.job.tenant, []).append(rj)
        self.ancestors: set[Node] = set()
        node = trial.parent(("t", me))
        while node is not None:
            self.ancestors.add(node)
            node = trial.parent(node)
        self.pruned: set[Node] = set()

    def has(self, tenant: str) -> bool:
        return bool(self.lists.get(tenant))

    def pop(self, tenant: str) -> RunningJob:
        return self.lists[tenant].pop(0)

    def drop(self, tenant: str) -> None:
        self.pruned.add(("t", tenant))

    def __iter__(self) -> Iterator[str]:
        me: Node = ("t", self.me)
        up = self.trial.parent(me)
        if up is None:
            while me not in self.pruned and self.has(self.me):
                yield self.me
            return
        root = up
        while (p := self.trial.parent(root)) is not None:
            root = p
        while root not in self.pruned:
            y = self._next(root)
            if y is not None:
                yield y

    def _next(self, cohort: Node) -> str | None:
        best_q: str | None = None
        best_q_drs = NEGATIVE
        best_c: Node | None = None
        best_c_drs = NEGATIVE
        for child in self.trial.children(cohort[1]):
            if child in self.pruned:
                continue
            d = drs(self.trial, child)
            if child[0] == "t":
                if (not d.borrowing and child[1] != self.me) or not self.has(child[1]):
                    self.pruned.add(child)
                elif best_q is not None and d.key() == best_q_drs.key():
                    first = _first_key(self.lists[child[1]][0], self.me)
                    if first < _first_key(self.lists[best_q][0], self.me):
                        best_q = child[1]
                elif d.key() > best_q_drs.key():
                    best_q, best_q_drs = child[1], d
            elif not d.borrowing and child not in self.ancestors:
                self.pruned.add(child)
            elif d.key() >= best_c_drs.key():
                best_c, best_c_drs = child, d
        if best_c is None and best_q is None:
            self.pruned.add(cohort)
            return None
        if best_c is not None and best_c_drs.key() >= best_q_drs.key():
            return self._next(best_c)
        return best_q


def _almost_lcas(ledger: QuotaLedger, me: str, y: str) -> tuple[Node, Node]:
    """The children of the lowest common cohort of queues ``me`` and ``y`` on their paths."""
    mine: list[Node] = [("t", me)]
    while (p := ledger.parent(mine[-1])) is not None:
        mine.append(p)
    node: Node = ("t", y)
    while (p := ledger.parent(node)) is not None and p not in mine:
        node = p
    lca = ledger.parent(node)
    side = next(n for n in mine if ledger.parent(n) == lca)
    return side, node


@dataclass(frozen=True, slots=True)
class Target:
    rj: RunningJob
    reason: str


def fair_targets(job: Job, request: Mapping[str, int], tenancy: Tenancy, ledger: QuotaLedger,
                 cands: Sequence[RunningJob], search: VictimSearch) -> list[Target] | None:
    """Kueue's fair-sharing targets for ``job`` (module docstring), or None. ``ledger``: usage
    without W; ``cands``: Kueue's candidates (policies/kueue/candidates.candidates) in its order;
    ``search``: the victim search whose ``attempt`` says W fits the quota (and, for the
    preemptor, the nodes) once the targets are gone, and which fills them back."""
    me = job.tenant
    queue = tenancy.tenant(me)
    assert queue is not None
    trial = ledger.copy()
    add_request(trial, job, dict(request))
    strategies = tenancy.fair_sharing_strategies or ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
    within = all(trial.used(me, f) <= queue.quota(f).nominal for f in request)
    targets: list[Target] = []
    retry: list[RunningJob] = []

    def take(rj: RunningJob, reason: str) -> bool:
        release(trial, rj)
        targets.append(Target(rj, reason))
        return search.attempt([t.rj for t in targets]) is not None

    done = False
    order = _Ordering(trial, me, cands)
    for y in order:
        if y == me:
            if take(order.pop(y), "InClusterQueue"):
                done = True
                break
            continue
        if within:
            if take(order.pop(y), "InCohortReclamation"):
                done = True
                break
            continue
        a, b = _almost_lcas(trial, me, y)
        new_p, old_t = drs(trial, a), drs(trial, b)
        if new_p.value == math.inf and old_t.value != math.inf:
            while order.has(y):  # nothing of Y's can pass either strategy
                retry.append(order.pop(y))
            continue
        while order.has(y):
            rj = order.pop(y)
            after = trial.copy()
            release(after, rj)
            if _strategy_passes(strategies[0], new_p, old_t, drs(after, b)):
                if take(rj, "InCohortFairSharing"):
                    done = True
                break  # shares changed: pick the queue again
            retry.append(rj)
        if done:
            break
    if not done and len(strategies) > 1:
        order = _Ordering(trial, me, retry)
        for y in order:
            a, b = _almost_lcas(trial, me, y)
            passed = drs(trial, a).key() < drs(trial, b).key()
            rj = order.pop(y)
            if passed and take(rj, "InCohortFairSharing"):
                done = True
                break
            order.drop(y)
    if not done:
        return None
    reason = {t.rj.job.id: t.reason for t in targets}
    return [Target(rj, reason[rj.job.id]) for rj in search.fill_back([t.rj for t in targets])]


# -- the admission tournament --------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Entry:
    """A head as the tournament sees it: its DRS at each level with it admitted."""

    tenant: str
    priority: int
    submit_time: float
    job_id: str
    flavors: tuple[str, ...]
    #: parent cohort → DRS of the head's node under it.
    at: tuple[tuple[Node, Drs], ...]

    def drs_under(self, cohort: Node) -> Drs:
        return next(d for c, d in self.at if c == cohort)


def entry(ledger: QuotaLedger, job: Job, flavor: str | None) -> Entry:
    """Kueue's ``computeDRS`` for one head: its usage added to its queue, the DRS of the queue
    and of each cohort on its path below the root."""
    led = ledger
    if flavor is not None and job.total_gpus:
        led = ledger.copy()
        add_request(led, job, {flavor: job.total_gpus})
    at: list[tuple[Node, Drs]] = []
    node: Node = ("t", job.tenant)
    while (p := led.parent(node)) is not None:
        at.append((p, drs(led, node)))
        node = p
    return Entry(job.tenant, job.priority, job.submit_time, job.id, (flavor,) if flavor else (), tuple(at))


def _less(a: Entry, b: Entry, cohort: Node) -> bool:
    da, db = a.drs_under(cohort), b.drs_under(cohort)
    ba, bb = da.borrowing_on(a.flavors), db.borrowing_on(b.flavors)
    if ba != bb:
        return not ba
    if da.key() != db.key():
        return da.key() < db.key()
    if a.priority != b.priority:
        return a.priority > b.priority
    return a.submit_time < b.submit_time


def tournament(ledger: QuotaLedger, entries: Mapping[str, Entry]) -> str:
    """The queue whose head is admitted next (module docstring)."""
    roots: dict[Node, list[Entry]] = {}
    for e in entries.values():
        node: Node = ("t", e.tenant)
        while (p := ledger.parent(node)) is not None:
            node = p
        roots.setdefault(node, []).append(e)
    nominees = [_run(ledger, root, entries) if root[0] == "c" else es[0] for root, es in roots.items()]
    best = min((n for n in nominees if n is not None),
               key=lambda e: (-e.priority, e.submit_time, e.tenant))
    return best.tenant


def _run(ledger: QuotaLedger, cohort: Node, entries: Mapping[str, Entry]) -> Entry | None:
    cands: list[Entry] = []
    for child in ledger.children(cohort[1]):
        if child[0] == "c":
            e = _run(ledger, child, entries)
            if e is not None:
                cands.append(e)
    cands.extend(entries[c[1]] for c in ledger.children(cohort[1]) if c[0] == "t" and c[1] in entries)
    if not cands:
        return None
    best = cands[0]
    for cur in cands[1:]:
        if _less(cur, best, cohort):
            best = cur
    return best
