"""Node scorers: a vector (or an order) over the nodes a filter kept, shared by every placer.

As kube-scheduler's Score plugins do, a scorer ranks candidate nodes; a chooser takes the best
one (one pod at a time) or fills them in order (a gang, ``gang_search.fill_in_order``). The
packing scorers used by the gang placers:

- ``best_fit_order``: fewest free GPUs first, partly used nodes fill
  before empty ones are broken (gang best fit, topology-blind, one-task-per-node);
- ``fewest_free``: the one node with the fewest free GPUs, lowest index on ties (a fractional
  pod that needs a fresh GPU: best fit at node level);
- ``tightest``: among groups (nodes, NVLink domains, leaves, spines), the one with the least
  capacity that still holds the request;
- ``tightest_else_largest``: "tightest group, else largest first", the one group rule of gang
  best fit's leaves (``filters.tightest_leaves``), the topology search's descent and Slurm's
  cons_tres switch choice;
- ``least_allocated``: the free share of each node's GPUs, kube-scheduler's default
  NodeResourcesFit LeastAllocated (spread), which the per-pod baseline reproduces.
"""

from __future__ import annotations

import numpy as np

from gpufleet.engine.snapshot import NodeTable


def least_allocated(table: NodeTable, nodes: np.ndarray) -> np.ndarray:
    """Per node in ``nodes`` (indices), free GPUs / total GPUs: higher is emptier."""
    return table.gpu_free[nodes] / np.maximum(table.gpu_total[nodes], 1)


def fewest_free(table: NodeTable, mask: np.ndarray) -> int:
    """Among the nodes in ``mask`` (at least one), the one with the fewest free GPUs; lowest
    index on ties."""
    idx = np.flatnonzero(mask)
    return int(idx[np.argmin(table.gpu_free[idx])])


def tightest(caps: np.ndarray, need: int) -> int | None:
    """The group (index into ``caps``) with the least capacity that still holds ``need``; the
    lowest index on ties; None when none does. Best fit at group level: big holes stay whole for
    big gangs (gang best fit's leaf, the topology search's node, domain, leaf and spine)."""
    fitting = (caps >= need).nonzero()[0]  # methods, not np.* wrappers: this runs per gang search
    if not fitting.size:
        return None
    return int(fitting[caps[fitting].argmin()])  # argmin keeps the lowest index on ties


def first_best(nodes: np.ndarray, scores: np.ndarray) -> int:
    """The node of ``nodes`` (not empty) with the highest score, the first on ties: the pick of
    every scorer here and of the FGD experiment's packing policies (policies/fgd/), whose
    candidate rows come in priority order so that the first of equals wins, as in FGD's
    simulator."""
    return int(nodes[np.argmax(scores)])


def best_of(nodes: np.ndarray, scores: np.ndarray) -> int | None:
    """``first_best``, or None when ``nodes`` is empty."""
    if nodes.size == 0:
        return None
    return first_best(nodes, scores)


def tightest_else_largest(caps: np.ndarray, need: int, *, tight_remainder: bool = True
                          ) -> tuple[np.ndarray, np.ndarray]:
    """(groups, amounts) that hold ``need`` among groups of capacity ``caps``: the tightest
    group that holds it alone (``tightest``); else the largest groups first (fewest groups
    crossed), the last one taking the remainder — with ``tight_remainder`` the tightest of the
    groups not yet taken that holds the remainder, else simply the next largest. Every group
    when even all of them hold less (the caller has counted that they do not)."""
    one = tightest(caps, need)
    if one is not None:
        return np.array([one]), np.array([need])
    order = (-caps).argsort(kind="stable")
    cum = caps[order].cumsum()
    count = int(cum.searchsorted(need)) + 1  # fewest groups that hold the job
    groups = order[:count].copy()
    amounts = caps[groups].astype(np.int64)
    if count > order.size:
        return groups, amounts
    amounts[-1] = need - (int(cum[count - 2]) if count > 1 else 0)
    if tight_remainder:
        remaining = order[count - 1:]
        pick = tightest(caps[remaining], int(amounts[-1]))
        assert pick is not None  # the count-th largest holds the remainder by construction
        groups[-1] = remaining[pick]
    return groups, amounts


def best_fit_order(table: NodeTable, cand: np.ndarray, tie: np.ndarray | None = None) -> np.ndarray:
    """Scorer: the nodes ``cand`` (indices, ascending), fewest free GPUs first (partly used
    nodes fill up before empty ones are broken); ties by node index, or by the rank ``tie``
    gives each node."""
    if tie is None:
        return cand[table.gpu_free[cand].argsort(kind="stable")]
    return cand[np.lexsort((tie[cand], table.gpu_free[cand]))]
