"""Where a gang goes in the topology tree: the tightest level that holds it, then best fit inside.

The tree is ``fleet > spine > leaf > NVLink domain > node`` (an HGX node is its own domain; a GB200
NVL72 domain holds 18 nodes). A job is a run of ``r`` pods in rank order, cut into *atoms* of ``k``
consecutive pods that must share one NVLink domain: ``k = tp / gpus_per_pod`` when a TP group is
larger than a pod (a TP=8 job in 4-GPU pods has atoms of 2 pods), else ``k = 1`` (a pod is on one
node, so a TP group inside a pod is inside a domain already).

**Algorithm** (``search``):

1. ``slots[n]``: pods node ``n`` can take now (vector). Atom capacity of a domain is
   ``floor(sum(slots in domain) / k)``; of a leaf, spine or the fleet, the sum over its domains
   (``bincount``, one vector operation per level).
2. Levels are tried tightest first: node (the whole job on one node), domain, leaf, spine, fleet,
   stopping at the job's required level. The first level with a group that holds all ``A = r / k``
   atoms wins, and within it the *tightest* such group (least capacity ≥ A; ties to the lowest
   index), so big holes stay whole for big jobs.
3. Descend: inside the chosen group, if one child holds the rest, take the tightest such child; if
   none does, take the largest children first (fewest children crossed) and, for the remainder, the
   tightest child that holds it. At a domain, fill its nodes best fit (fewest free GPUs first, ties
   by index), ``k`` pods per atom, so partly used nodes fill before empty ones are broken. Where
   every domain is one node (HGX), a leaf is filled the same way over its nodes directly, whole
   atoms per node: the same packing as gang best fit, in one vector pass instead of one per node.

**Invariants.** Every atom lies in one domain (its ``k`` pods are drawn from one domain's nodes);
no node gets more pods than its slots; the result holds exactly ``r`` pods or is None.

**Why.** The step-time model (steptime.py) is monotone in the tier a traffic group crosses, so the
lowest level that holds the job is the cheapest one; among equals, best fit is what keeps the
fleet packable. The loop in step 3 visits only the groups the job ends up using.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.job import PodRequest
from gpufleet.policies.gang_search import fill_counts
from gpufleet.policies.scorers import best_fit_order, tightest, tightest_else_largest

#: Levels of the tree, tightest first. "nvlink" is the NVLink domain.
LEVELS: tuple[str, ...] = ("node", "nvlink", "leaf", "spine", "fleet")
LEVEL_RANK: dict[str, int] = {name: i for i, name in enumerate(LEVELS)}


@dataclass(frozen=True, slots=True)
class Placement:
    """Pods in allocation order (atoms are consecutive runs of ``k``) and the level that held them."""

    nodes: np.ndarray  # node index per pod, allocation order
    level: str
    group: int


@dataclass(slots=True)
class _Capacity:
    """Per-domain atom capacity and the maps from domains up the tree."""

    slots: np.ndarray        # pods per node
    dom_cap: np.ndarray      # atoms per domain
    dom_leaf: np.ndarray     # leaf of each domain
    dom_spine: np.ndarray    # spine of each domain
    one_node_domains: bool   # every domain is a single node (HGX): a leaf is filled node by node


def _capacity(table: NodeTable, slots: np.ndarray, k: int) -> _Capacity:
    n_dom = int(table.domain_idx.max()) + 1 if len(table) else 0
    dom_slots = np.bincount(table.domain_idx, weights=slots, minlength=n_dom).astype(np.int64)
    dom_leaf = np.zeros(n_dom, np.int64)
    dom_spine = np.zeros(n_dom, np.int64)
    # A domain lies within one leaf (build_fleet guarantees it), so any node names its leaf.
    dom_leaf[table.domain_idx] = table.leaf_idx
    dom_spine[table.domain_idx] = table.spine_idx
    return _Capacity(slots, dom_slots // k, dom_leaf, dom_spine, n_dom == len(table))


def _group_of_domain(cap: _Capacity, level: str) -> np.ndarray:
    if level == "nvlink":
        return np.arange(cap.dom_cap.size, dtype=np.int64)
    if level == "leaf":
        return cap.dom_leaf
    if level == "spine":
        return cap.dom_spine
    return np.zeros(cap.dom_cap.size, np.int64)


def _pick_children(caps: np.ndarray, ids: np.ndarray, need: int) -> list[tuple[int, int]]:
    """(child, atoms) to take ``need`` atoms from children with capacities ``caps``: the one
    group rule (``scorers.tightest_else_largest``, the remainder in the tightest child)."""
    groups, atoms = tightest_else_largest(caps, need)
    return list(zip(ids[groups].tolist(), atoms.tolist(), strict=True))


def _fill(table: NodeTable, mask: np.ndarray, per_node: np.ndarray, units: int, k: int) -> list[int]:
    """The shared best-fit scorer and fill (gang_search.py) over the nodes in ``mask``: ``units``
    of ``k`` pods each, never split over nodes; the node of each pod, in order."""
    filled = fill_counts(best_fit_order(table, (mask & (per_node > 0)).nonzero()[0]), per_node, units)
    assert filled is not None  # the group was chosen because it holds them
    return np.repeat(filled[0], filled[1] * k).tolist()


def _fill_domain(table: NodeTable, cap: _Capacity, domain: int, pods: int) -> list[int]:
    return _fill(table, table.domain_idx == domain, cap.slots, pods, 1)


def _fill_leaf_nodes(table: NodeTable, cap: _Capacity, leaf: int, atoms: int, k: int) -> list[int]:
    """Best fit over a leaf of one-node domains: ``k`` pods per atom, never split over nodes."""
    return _fill(table, table.leaf_idx == leaf, cap.slots // k, atoms, k)


def _descend(table: NodeTable, cap: _Capacity, level: str, group: int, atoms: int, k: int) -> list[int]:
    if level == "nvlink":
        return _fill_domain(table, cap, group, atoms * k)
    if level == "leaf" and cap.one_node_domains:
        return _fill_leaf_nodes(table, cap, group, atoms, k)
    child = LEVELS[LEVEL_RANK[level] - 1]
    in_group = _group_of_domain(cap, level) == group  # at "fleet" every domain is in group 0
    child_of_dom = _group_of_domain(cap, child)
    ids = np.unique(child_of_dom[in_group])
    caps = np.bincount(child_of_dom[in_group], weights=cap.dom_cap[in_group],
                       minlength=int(ids.max()) + 1)[ids].astype(np.int64)
    out: list[int] = []
    for c, a in _pick_children(caps, ids, atoms):
        out += _descend(table, cap, child, c, a, k)
    return out


def search(table: NodeTable, req: PodRequest, replicas: int, k: int = 1,
           max_level: str = "fleet", slots: np.ndarray | None = None) -> Placement | None:
    """Nodes for ``replicas`` pods of ``req`` in atoms of ``k`` (see the module doc), or None.

    ``max_level`` is the widest level the whole job may span (a required topology level).
    """
    if replicas % k:
        raise ValueError(f"{replicas} pods do not split into atoms of {k}")
    raw = table.slots(req) if slots is None else slots
    slots = np.minimum(raw, replicas)
    atoms = replicas // k
    top = LEVEL_RANK[max_level]
    fits_node = tightest(raw, replicas)
    if fits_node is not None:
        return Placement(np.full(replicas, fits_node, np.int64), "node", fits_node)
    cap = _capacity(table, slots, k)
    for level in LEVELS[1: top + 1]:
        group_of = _group_of_domain(cap, level)
        caps = np.bincount(group_of, weights=cap.dom_cap, minlength=int(group_of.max(initial=0)) + 1)
        g = tightest(caps.astype(np.int64), atoms)
        if g is not None:
            return Placement(np.asarray(_descend(table, cap, level, g, atoms, k), np.int64), level, g)
    return None


def largest_group_atoms(table: NodeTable, req: PodRequest, replicas: int, k: int, level: str,
                        empty: bool = False) -> int:
    """Atoms the roomiest group at ``level`` holds now (or when the fleet is ``empty``)."""
    slots = np.minimum(table.slots(req, empty=empty), replicas)
    if level == "node":
        return int(slots.max(initial=0)) // k
    cap = _capacity(table, slots, k)
    group_of = _group_of_domain(cap, level)
    return int(np.bincount(group_of, weights=cap.dom_cap).max(initial=0))
