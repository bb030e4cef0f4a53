"""Kueue's dominant resource share (DRS) at every level of the cohort tree, for the kueue profile.

From Kueue's concept doc "Fair Sharing" and its code (kubernetes-sigs/kueue
pkg/cache/scheduler/fair_sharing.go ``dominantResourceShare``, ``calculateLendable``,
``CompareDRS``). Every node x below the root — a ClusterQueue or a Cohort — with parent p:

    borrowed(x, r) = Σ_f max(0, usage(x, f, r) − subtree(x, f, r))      per resource *name* r,
                                                                        summed over flavors
    lendable(p, r) = Σ_f potential_available(p, f, r)                   every flavor of the tree,
                                                                        what p could reach with
                                                                        no usage (kueue/tree.py)
    ratio(x)       = max over r with lendable(p, r) > 0 of 1000 × borrowed(x, r) / lendable(p, r)
    share(x)       = 0 when ratio is 0; ∞ when weight(x) = 0; else ratio / weight(x)

A resource with nothing lendable is skipped (it cannot make the share infinite); a node that
borrows only such resources is *borrowing* with share 0. Comparison (``CompareDRS``): a
zero-weight borrower (ratio > 0) ranks above every other node, two of them by their ratios;
otherwise by share. The resources are GPUs (``nvidia.com/gpu``) and, when the tenancy has quota
on them (``resources``), ``cpu`` and ``memory``: each on the same cohort tree, with its own
quotas and limits (``_view``: the tenancy with that resource's quota in place of GPUs) and the
usage a ``ShareLedger`` carries beside the GPUs. So a queue that borrows 8 of 32 lendable GPUs
(250) but 40 of 128 lendable cores has share 312.5: cpu is its dominant resource.

``share_path`` lists the shares from the root's child down to the queue, the values Kueue's
fair-sharing tournament compares at each level (policies/kueue/fair.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from gpufleet.engine.types import RunningJob
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Cohort, Tenancy, TenantQueue
from gpufleet.policies.kueue.resources import RESOURCES, ResourceLedger
from gpufleet.policies.kueue.tree import potential_available
from gpufleet.policies.quota import Node, QuotaLedger


@dataclass(frozen=True, slots=True)
class Drs:
    """One node's dominant resource share (Kueue's ``DRS``)."""

    weight: float = 1.0
    #: 1000 × borrowed / lendable of the dominant resource, before the weight.
    ratio: float = 0.0
    borrowing: bool = False
    #: Flavors x borrows on (Kueue's ``borrowedFRs``).
    borrowed_flavors: tuple[str, ...] = ()

    @property
    def value(self) -> float:
        """Kueue's ``PreciseWeightedShare``."""
        if self.ratio == 0:
            return 0.0
        return math.inf if self.weight == 0 else self.ratio / self.weight

    def key(self) -> tuple[int, float]:
        """Sort key equivalent to ``CompareDRS``: lower is fairer to admit, higher to preempt."""
        if self.weight == 0 and self.ratio != 0:
            return (1, self.ratio)
        return (0, self.value)

    def borrowing_on(self, flavors: Iterable[str]) -> bool:
        return any(f in self.borrowed_flavors for f in flavors)


#: Kueue's ``NegativeDRS``: below every real share, the start of a search for the highest.
NEGATIVE = Drs(1.0, -1.0)


def weight(tenancy: Tenancy, node: Node) -> float:
    if node[0] == "t":
        t = tenancy.tenant(node[1])
        return t.weight if t is not None else 1.0
    c = tenancy.cohort(node[1])
    return c.weight if c is not None else 1.0


def _flavors(tenancy: Tenancy) -> tuple[str, ...]:
    seen = dict.fromkeys(tenancy.flavors)
    for c in tenancy.cohorts:
        seen.update(dict.fromkeys(f for f, _ in c.quotas))
    return tuple(seen)


class ShareLedger(QuotaLedger):
    """A QuotaLedger (GPUs) with the cpu and memory usage beside it (``res``), for DRS over
    every resource. ``res`` is the caller's ResourceLedger, kept by the caller as it keeps the
    GPU usage; ``copy`` copies both, and ``release`` / ``add_job`` here change both."""

    res: ResourceLedger

    def copy(self) -> ShareLedger:
        out = ShareLedger.__new__(ShareLedger)
        out.tenancy, out._children, out._static = self.tenancy, self._children, self._static
        out.usage = dict(self.usage)
        out._available = dict(self._available)
        out.res = self.res.copy()
        return out


def share_ledger(ledger: QuotaLedger, res: ResourceLedger) -> QuotaLedger:
    """``ledger`` carrying ``res`` for the shares, when fair sharing is on and some queue or
    cohort has cpu or memory quota; else ``ledger`` itself (the shares are GPUs only)."""
    t = ledger.tenancy
    if not t.fair_sharing or not (any(q.resources for q in t.tenants) or any(c.resources for c in t.cohorts)):
        return ledger
    out = ShareLedger.__new__(ShareLedger)
    out.tenancy, out._children, out._static = ledger.tenancy, ledger._children, ledger._static
    out.usage, out._available, out.res = ledger.usage, ledger._available, res
    return out


def release(ledger: QuotaLedger, rj: RunningJob) -> None:
    """``rj``'s usage leaves ``ledger`` (GPUs, and cpu and memory on a ShareLedger)."""
    ledger.charge_bindings(rj.job.tenant, rj.bindings, -1)
    if isinstance(ledger, ShareLedger):
        ledger.res.charge(rj.job.tenant, rj.bindings, -1)


def add_request(ledger: QuotaLedger, job: Job, request: dict[str, int]) -> None:
    """``job``'s request joins ``ledger``: ``request`` GPUs per flavor, and on a ShareLedger its
    cpu and memory, each pod set on its pinned flavor when that is in ``request``, else on the
    request's first flavor."""
    for f, v in request.items():
        ledger.add(job.tenant, f, v)
    if isinstance(ledger, ShareLedger) and request:
        first = next(iter(request))
        for ps in job.pod_sets:
            f = next((m for m in ps.request.gpu_models if m in request), first)
            ledger.res.add_job(replace(job, pod_sets=(ps,)), f)


#: (tenancy, resource) → a QuotaLedger over the tenancy with that resource's quota in place of
#: the GPUs'; its tree arithmetic is static, so one per tenancy (the last few kept).
_VIEWS: dict[tuple[int, str], tuple[Tenancy, QuotaLedger]] = {}


def _view(tenancy: Tenancy, resource: str) -> QuotaLedger:
    key = (id(tenancy), resource)
    hit = _VIEWS.get(key)
    if hit is not None and hit[0] is tenancy:
        return hit[1]

    def only(res: tuple[tuple[str, str, object], ...]) -> tuple:
        return tuple((f, q) for f, r, q in res if r == resource)

    view = Tenancy(tenants=tuple(TenantQueue(t.name, t.cohort, only(t.resources), t.weight)
                                 for t in tenancy.tenants),
                   cohorts=tuple(Cohort(c.name, c.parent, only(c.resources), weight=c.weight)
                                 for c in tenancy.cohorts))
    if len(_VIEWS) > 16:
        _VIEWS.clear()
    led = QuotaLedger(view)
    _VIEWS[key] = (tenancy, led)
    return led


def _borrowed_and_lendable(ledger: QuotaLedger, node: Node, parent: Node,
                           flavors: list[str]) -> tuple[float, float]:
    borrowed = 0.0
    for f in _flavors(ledger.tenancy):
        over = ledger.node_usage(node, f) - ledger.node_capacity(node, f)
        if over > 0:
            borrowed += over
            flavors.append(f)
    if not borrowed:
        return 0.0, 0.0
    return borrowed, sum(potential_available(ledger, parent, f) for f in _flavors(ledger.tenancy))


def lendable(ledger: QuotaLedger, parent: Node) -> float:
    """GPUs of every flavor ``parent`` could reach with no usage anywhere."""
    return sum(potential_available(ledger, parent, f) for f in _flavors(ledger.tenancy))


def drs(ledger: QuotaLedger, node: Node) -> Drs:
    """share(x) of the module docstring, as Kueue's ``DRS`` value: the dominant resource's
    ratio over GPUs and, on a ShareLedger, cpu and memory."""
    w = weight(ledger.tenancy, node)
    parent = ledger.parent(node)
    if parent is None:
        return Drs(w)
    flavors: list[str] = []
    views: list[QuotaLedger] = [ledger]
    if isinstance(ledger, ShareLedger):
        for r in RESOURCES:
            v = _view(ledger.tenancy, r).copy()
            # cpu cores and memory GB need not be whole: the arithmetic is the same on floats.
            v.usage = {(t, f): u for (t, f, rr), u in ledger.res.used.items() if rr == r}  # type: ignore[misc]
            v._available = {}
            views.append(v)
    ratio = 0.0
    for v in views:
        borrowed, pool = _borrowed_and_lendable(v, node, parent, flavors)
        if pool > 0:  # a resource with nothing lendable is skipped
            ratio = max(ratio, 1000.0 * borrowed / pool)
    if not flavors:
        return Drs(w)
    return Drs(w, ratio, True, tuple(dict.fromkeys(flavors)))


def node_share(ledger: QuotaLedger, node: Node) -> float:
    """share(x) as a number (0 for the root, which has no parent to borrow from)."""
    return drs(ledger, node).value


def path(ledger: QuotaLedger, tenant: str) -> list[Node]:
    """The nodes from the root's child down to ``tenant`` (the root itself left out)."""
    nodes: list[Node] = []
    node: Node | None = ("t", tenant)
    while node is not None and ledger.parent(node) is not None:
        nodes.append(node)
        node = ledger.parent(node)
    return nodes[::-1]


def _with(ledger: QuotaLedger, tenant: str, extra: tuple[str, int] | None) -> QuotaLedger:
    if extra is None or not extra[1]:
        return ledger
    led = ledger.copy()
    led.add(tenant, extra[0], extra[1])  # (GPUs only: a share path is a report, not a decision)
    return led


def share_path(ledger: QuotaLedger, tenant: str, extra: tuple[str, int] | None = None) -> tuple[float, ...]:
    """Shares along ``path``; ``extra`` (flavor, GPUs) is added to the queue's usage first."""
    led = _with(ledger, tenant, extra)
    return tuple(node_share(led, n) for n in path(led, tenant)) or (weighted_share(led, tenant),)


def weighted_share(ledger: QuotaLedger, tenant: str, extra: tuple[str, int] | None = None) -> float:
    """The queue's own share in its cohort (its last element of ``share_path``)."""
    if ledger.tenancy.tenant(tenant) is None:
        return math.inf
    return node_share(_with(ledger, tenant, extra), ("t", tenant))
