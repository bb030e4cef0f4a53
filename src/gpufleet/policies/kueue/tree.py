"""Kueue's arithmetic on the cohort tree beyond admission's: borrowing level, potential capacity,
whether a workload may preempt at all.

policies/quota.py holds the shared arithmetic (subtree(x), guaranteed(x), usage(x), available(x),
Kueue's ``SubtreeQuota``, ``localQuota``, ``Usage`` and ``available``). The ``kueue`` profile
needs four more of Kueue's functions (kubernetes-sigs/kueue pkg/cache/scheduler/resource_node.go
and pkg/scheduler/preemption/classical/hierarchical_preemption.go), per flavor f:

* ``local_available(x) = max(0, guaranteed(x) − usage(x))``: quota x keeps that its parent
  never sees.
* ``borrowing_with(x, v)``: x would be above what it owns with v more, usage(x) + v > own(x),
  own = nominal for a ClusterQueue, subtree for a Cohort.
* ``height(x)``: 0 for a ClusterQueue; for a Cohort, 1 when it has any child and 1 + the
  tallest child cohort's height otherwise (Kueue's ``getNodeHeight``).
* ``lowest_subtree_height(t, v)`` (``FindHeightOfLowestSubtreeThatFits``): 0 when t does not
  borrow with v; else walk up from t's parent with r = v − local_available(t), at each cohort
  c: if not borrowing_with(c, r) the answer is height(c), else r −= local_available(c); no
  cohort holds it: height(root). The second value says whether the fitting subtree is below
  the root (Kueue's ``mayReclaimInHierarchy``: the workload has a claim on quota somewhere
  below the root, so it may reclaim it even while its queue borrows).
* ``potential_available(x)``: the most x could hold with no usage anywhere: the root's subtree;
  below it local(x) + potential_available(parent), capped at subtree(x) + borrowing_limit(x)
  when x has a borrowing limit.

The borrowing level is a height, not a count of steps: in org > {team > {a, sub > {x}}, b} a
head of a fitting in ``team`` is at level 2 (``sub`` makes team two high) and one of b fitting
in ``org`` at level 3, where counting steps up gives 1 and 1. The two agree on trees whose
leaves are all at the same depth.
"""

from __future__ import annotations

from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.quota import Node, QuotaLedger


def local_available(ledger: QuotaLedger, node: Node, flavor: str) -> int:
    return max(0, ledger.node_guaranteed(node, flavor) - ledger.node_usage(node, flavor))


def borrowing_with(ledger: QuotaLedger, node: Node, flavor: str, val: int) -> bool:
    own = ledger.node_quota(node, flavor).nominal if node[0] == "t" else ledger.node_capacity(node, flavor)
    return own < ledger.node_usage(node, flavor) + val


def height(ledger: QuotaLedger, node: Node) -> int:
    if node[0] == "t":
        return 0
    kids = ledger.children(node[1])
    tallest = min(len(kids), 1)
    for kid in kids:
        if kid[0] == "c":
            tallest = max(tallest, height(ledger, kid) + 1)
    return tallest


def root(ledger: QuotaLedger, node: Node) -> Node:
    while (up := ledger.parent(node)) is not None:
        node = up
    return node


def lowest_subtree_height(ledger: QuotaLedger, tenant: str, flavor: str, val: int) -> tuple[int, bool]:
    """(height of the lowest subtree holding ``val`` more of ``flavor`` for ``tenant``, whether
    that subtree is below the root); module docstring."""
    node: Node = ("t", tenant)
    has_parent = ledger.parent(node) is not None
    if not borrowing_with(ledger, node, flavor, val) or not has_parent:
        return 0, has_parent
    remaining = val - local_available(ledger, node, flavor)
    up = ledger.parent(node)
    while up is not None:
        if not borrowing_with(ledger, up, flavor, remaining):
            return height(ledger, up), ledger.parent(up) is not None
        remaining -= local_available(ledger, up, flavor)
        up = ledger.parent(up)
    return height(ledger, root(ledger, node)), False


def potential_available(ledger: QuotaLedger, node: Node, flavor: str) -> float:
    """Kueue's ``potentialAvailable`` (module docstring)."""
    parent = ledger.parent(node)
    if parent is None:
        return ledger.node_capacity(node, flavor)
    avail = ledger.node_guaranteed(node, flavor) + potential_available(ledger, parent, flavor)
    limit = ledger.node_quota(node, flavor).borrowing_limit
    if limit is not None:
        avail = min(avail, ledger.node_capacity(node, flavor) + limit)
    return avail


def may_preempt(ledger: QuotaLedger, tenancy: Tenancy, tenant: str, flavor: str, val: int) -> bool:
    """Whether Kueue's flavor assigner lets a workload of ``val`` GPUs of ``flavor`` that does
    not fit the unused quota look for preemption targets at all (``fitsResourceQuota``): its
    request within its queue's nominal quota, or a claim on quota below the root (``may reclaim
    in hierarchy``), or a queue that may preempt while borrowing (``borrowWithinCohort`` set, or
    fair sharing with ``reclaimWithinCohort`` not Never). Otherwise Kueue refuses it up front
    (NoFit): it preempts nothing, not even in its own queue."""
    t = tenancy.tenant(tenant)
    if t is None:
        return False
    if val <= t.quota(flavor).nominal:
        return True
    if lowest_subtree_height(ledger, tenant, flavor, val)[1]:
        return True
    pol = t.kueue
    return pol.borrow_within_cohort != "Never" or (
        tenancy.fair_sharing and pol.reclaim_within_cohort != "Never")

