"""Kueue's dominant resource share (DRS) at every level of the cohort tree, for the kueue profile.

From Kueue's concept doc "Fair Sharing" and its code (kubernetes-sigs/kueue
pkg/cache/scheduler/fair_sharing.go ``dominantResourceShare``, ``calculateLendable``,
``CompareDRS``). Every node x below the root — a ClusterQueue or a Cohort — with parent p:

    borrowed(x, r) = Σ_f max(0, usage(x, f, r) − subtree(x, f, r))      per resource *name* r,
                                                                        summed over flavors
    lendable(p, r) = Σ_f potential_available(p, f, r)                   every flavor of the tree,
                                                                        what p could reach with
                                                                        no usage (kueue_tree.py)
    ratio(x)       = max over r with lendable(p, r) > 0 of 1000 × borrowed(x, r) / lendable(p, r)
    share(x)       = 0 when ratio is 0; ∞ when weight(x) = 0; else ratio / weight(x)

A resource with nothing lendable is skipped (it cannot make the share infinite); a node that
borrows only such resources is *borrowing* with share 0. Comparison (``CompareDRS``): a
zero-weight borrower (ratio > 0) ranks above every other node, two of them by their ratios;
otherwise by share. Here the resource is GPUs (``nvidia.com/gpu``) in every flavor: cpu and
memory quota (policies/kueue_resources.py, flat, without the tree) do not enter the share.

``share_path`` lists the shares from the root's child down to the queue, the values Kueue's
fair-sharing tournament compares at each level (policies/kueue_fair.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.kueue_tree import potential_available
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


def lendable(ledger: QuotaLedger, parent: Node) -> float:
    """GPUs of every flavor ``parent`` could reach with no usage anywhere."""
    return sum(potential_available(ledger, parent, f) for f in _flavors(ledger.tenancy))


def drs(ledger: QuotaLedger, node: Node) -> Drs:
    """share(x) of the module docstring, as Kueue's ``DRS`` value."""
    w = weight(ledger.tenancy, node)
    parent = ledger.parent(node)
    if parent is None:
        return Drs(w)
    borrowed = 0
    flavors: list[str] = []
    for f in _flavors(ledger.tenancy):
        over = ledger.node_usage(node, f) - ledger.node_capacity(node, f)
        if over > 0:
            borrowed += over
            flavors.append(f)
    if not flavors:
        return Drs(w)
    pool = lendable(ledger, parent)
    ratio = 1000.0 * borrowed / pool if pool > 0 else 0.0
    return Drs(w, ratio, True, tuple(flavors))


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
    led.add(tenant, extra[0], extra[1])
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
