"""Kueue's weighted share (DRS value) at every level of the cohort tree, for the kueue profile.

From Kueue's concept doc "Fair Sharing" and its hierarchical-cohort support: every node x of the
tree below the root — a ClusterQueue or a Cohort — has a share in its parent p,

    share(x) = 1000 × max_f borrowed(x, f) / lendable(p, f) ÷ weight(x)

with borrowed(x, f) = max(0, usage(x, f) − subtree(x, f)) (what x's subtree uses beyond what it
owns, policies/quota.py's arithmetic), lendable(p, f) = subtree(p, f) (what p's subtree may lend
among its children) and weight(x) the ClusterQueue's or the Cohort's ``fairSharing.weight``;
weight 0 makes any borrowing infinite. Two queues are compared at their lowest common ancestor:
by the shares of the two children of that cohort on their paths — so a Cohort's weight decides
between teams before the queues' own weights decide within a team.

``share_path`` lists the shares from the root's child down to the queue; comparing two such
tuples element by element compares the first level where the paths part (equal shares above it
belong to the same nodes). Admission uses it to pick the head with the lowest path (Kueue's
fair-sharing iterator); preemption, to pick the victim queue with the highest and to apply the
strategies at the common ancestor.
"""

from __future__ import annotations

import math

from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.quota import Node, QuotaLedger


def _weight(tenancy: Tenancy, node: Node) -> float:
    if node[0] == "t":
        t = tenancy.tenant(node[1])
        return t.weight if t is not None else 1.0
    c = tenancy.cohort(node[1])
    return c.weight if c is not None else 1.0


def node_share(ledger: QuotaLedger, node: Node) -> float:
    """share(x) of the module docstring (0 for the root, which has no parent to borrow from)."""
    parent = ledger.parent(node)
    if parent is None:
        return 0.0
    drs = 0.0
    for f in ledger.tenancy.flavors:
        borrowed = ledger.node_usage(node, f) - ledger.node_capacity(node, f)
        if borrowed > 0:
            pool = ledger.node_capacity(parent, f)
            drs = max(drs, math.inf if pool <= 0 else 1000.0 * borrowed / pool)
    if drs == 0.0:
        return 0.0
    w = _weight(ledger.tenancy, node)
    return math.inf if w == 0 else drs / w


def path(ledger: QuotaLedger, tenant: str) -> list[Node]:
    """The nodes from the root's child down to ``tenant`` (the root itself left out)."""
    nodes: list[Node] = []
    node: Node | None = ("t", tenant)
    while node is not None and ledger.parent(node) is not None:
        nodes.append(node)
        node = ledger.parent(node)
    return nodes[::-1]


def share_path(ledger: QuotaLedger, tenant: str, extra: tuple[str, int] | None = None) -> tuple[float, ...]:
    """Shares along ``path``; ``extra`` (flavor, GPUs) is added to the queue's usage first."""
    led = ledger
    if extra is not None and extra[1]:
        led = ledger.copy()
        led.add(tenant, extra[0], extra[1])
    return tuple(node_share(led, n) for n in path(led, tenant)) or (weighted_share(led, tenant),)


def weighted_share(ledger: QuotaLedger, tenant: str, extra: tuple[str, int] | None = None) -> float:
    """The queue's own share in its cohort (its last element of ``share_path``)."""
    led = ledger
    if extra is not None and extra[1]:
        led = ledger.copy()
        led.add(tenant, extra[0], extra[1])
    if ledger.tenancy.tenant(tenant) is None:
        return math.inf
    return node_share(led, ("t", tenant))


def at_common_ancestor(ledger_x: QuotaLedger, x: str, ledger_y: QuotaLedger, y: str) -> tuple[float, float]:
    """(share of x's side, share of y's side) at the lowest common ancestor of queues x and y,
    each from its own ledger."""
    px, py = path(ledger_x, x), path(ledger_y, y)
    i = 0
    while i < min(len(px), len(py)) - 1 and px[i] == py[i]:
        i += 1
    nx = px[i] if i < len(px) else ("t", x)
    ny = py[i] if i < len(py) else ("t", y)
    return node_share(ledger_x, nx), node_share(ledger_y, ny)
