"""The topology-blind baseline: gang all-or-nothing, best-fit packing, random ties.

What it stands for: a gang scheduler whose scoring does not see the network — kube-scheduler
with a coscheduling/Volcano gang plugin and a bin-packing score (MostAllocated), or Slurm's
select/cons_tres without topology/tree. Each pod set goes to the nodes with the fewest free GPUs
that can take its pods (best fit, as ``gang-bestfit`` does), each node taking as many pods as it
has room for; nodes with equal free GPUs are ordered by a seeded random permutation from
``ctx.rng``, as kube-scheduler's selectHost picks at random among equally scored nodes.

Why this is a fair stand-in: it packs exactly as well as the topology-aware placer (the same
best-fit key, the same gang semantics), so whatever separates them is topology, not packing or
gang handling. Ties are random rather than in node order because node names usually follow racks,
and node-order tie-breaking would be topology-aware by accident. It is kinder than kube-scheduler's
default LeastAllocated (spread), which would scatter a gang's pods over the emptiest nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpufleet.engine.phases.place import PlaceOutcome
from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status
from gpufleet.engine.types import CycleContext, PendingJob
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.gang import place_in_order
from gpufleet.policies.gang_search import fill_in_order, gang_search
from gpufleet.policies.scorers import best_fit_order


def blind_nodes(table: NodeTable, req: PodRequest, replicas: int, rng: np.random.Generator
                ) -> list[tuple[int, int]] | None:
    """(node, pods) pairs for ``replicas`` pods: no leaf filter, the best-fit scorer with seeded
    random ties, the shared fill; None if they do not fit (no draw from ``rng`` then)."""
    slots = table.slots(req)
    if int(np.minimum(slots, replicas).sum()) < replicas:
        return None
    tie = rng.permutation(len(table))
    return fill_in_order(best_fit_order(table, (slots > 0).nonzero()[0], tie), slots, replicas)


class TopologyBlind:
    """Gang best fit that ignores leaves and NVLink domains; see the module doc."""

    name = "topology-blind"
    defer = False

    def __init__(self, stop_at_first_blocked: bool = False) -> None:
        self.stop_at_first_blocked = stop_at_first_blocked

    def feasible(self, job: Job, table: NodeTable, ctx: CycleContext) -> bool | None:
        """None: ``fit`` draws its nodes from the cycle's seeded generator, and a search that
        answered without it would shift every later draw of the cycle."""
        return None

    def fit(self, job: Job, table: NodeTable, ctx: CycleContext) -> tuple[PodBinding, ...] | Status:
        """The shared gang search with best fit and seeded random ties (``blind_nodes``)."""

        def choose(scratch: NodeTable, ps: PodSet) -> list[tuple[int, int]] | None:
            return blind_nodes(scratch, ps.request, ps.replicas, ctx.rng)

        return gang_search(job, table, ctx, self.name, choose)

    def place(self, ordered: Sequence[PendingJob], plan: Plan, ctx: CycleContext) -> PlaceOutcome:
        return place_in_order(self, ordered, plan, ctx, self.stop_at_first_blocked)
