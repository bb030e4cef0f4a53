"""Where our engine puts a placement group's bundles, asked through ``run_cycle`` like any driver.

``engine_placement(pg, table)`` answers the question Ray's GCS answers when it creates a placement
group: given these nodes and what is already used on them, which node holds each bundle — or none
(the group stays PENDING). Comparing the two on the same nodes is tests/integration/test_ray_placement.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.adapters.ray.mapping import PlacementGroupSpec, bundle_index, profiles_for, to_job
from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import CycleInput, PendingJob


@dataclass(frozen=True)
class Placement:
    """Bundle i on node ``nodes[i]`` (indices into the table); ``nodes`` is None when the group
    cannot be placed now, and ``reason`` is the engine's own reason."""

    nodes: tuple[int, ...] | None
    reason: str = ""

    @property
    def placed(self) -> bool:
        return self.nodes is not None

    def shape(self) -> tuple[int, ...]:
        """Bundles per node used, largest first: what a strategy constrains, not which node."""
        if self.nodes is None:
            return ()
        return tuple(sorted((self.nodes.count(n) for n in set(self.nodes)), reverse=True))


def engine_placement(pg: PlacementGroupSpec, table: NodeTable, now: float = 0.0) -> Placement:
    job = to_job(pg)
    reason = ""
    for prof in profiles_for(pg.strategy):
        result = run_cycle(CycleInput(now=now, nodes=table, pending=[PendingJob(job)], profile=prof))
        if job.id in result.started:
            nodes = [0] * len(pg.bundles)
            for b in result.bindings:
                i = bundle_index(pg, b.pod_set, b.replica)
                if i < 0:  # STRICT_PACK: one pod holds them all
                    nodes = [b.node] * len(pg.bundles)
                else:
                    nodes[i] = b.node
            return Placement(tuple(nodes))
        status = result.statuses.get(job.id)
        reason = "; ".join(status.reasons) if status is not None else "not placed"
    return Placement(None, reason)
