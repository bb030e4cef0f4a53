"""Node scorers: a vector (or an order) over the nodes a filter kept, shared by every placer.

As kube-scheduler's Score plugins do, a scorer ranks candidate nodes; a chooser takes the best
one (one pod at a time) or fills them in order (a gang, ``gang_search.fill_in_order``). The
packing scorers used by the gang placers:

- ``best_fit_order`` (policies/gang_search.py): fewest free GPUs first, partly used nodes fill
  before empty ones are broken (gang best fit, topology-blind, one-task-per-node);
- ``fewest_free``: the one node with the fewest free GPUs, lowest index on ties (a fractional
  pod that needs a fresh GPU: best fit at node level);
- ``tightest``: among groups (nodes, NVLink domains, leaves, spines), the one with the least
  capacity that still holds the request;
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
    fitting = np.flatnonzero(caps >= need)
    if not fitting.size:
        return None
    return int(fitting[np.argmin(caps[fitting])])  # argmin keeps the lowest index on ties


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
