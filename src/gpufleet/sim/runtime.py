"""The simulator's runtime model: a placement stretches a training job's run time by its slowdown.

A trace's run time is the run time at the ideal placement (TP groups inside NVLink domains, the
job packed into as few domains as its size allows, one leaf: ``steptime.reference_placement``).
Started on an actual placement, the job runs ``factor = step(actual) / step(ideal)`` times as long,
where ``step`` is the full step-time model of steptime.py over the job's ranks: every TP group,
pipeline hop and gradient group priced at the slowest link it crosses. Jobs without a parallel
layout and a training profile run at their trace time (factor 1.0): nothing says what their
traffic is.

Ranks follow pods: pod ``i`` (in rank order, which is binding order) holds ranks
``[i*g, (i+1)*g)`` for pods of ``g`` GPUs. The domain size used for the ideal is that of the
domain the job's first rank sits in (8 GPUs for an HGX node, 72 for an NVL72 rack).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.fleet import Fleet
from gpufleet.model.job import Job
from gpufleet.policies.steptime import DEFAULT_KNOBS, StepKnobs, domain_sizes, slowdown


@dataclass
class TopologyRuntime:
    """``RuntimeModel`` for ``simulate``: (job, pod nodes in rank order, table) -> stretch ≥ 1.

    Memoised per (job layout, profile, node tuple): a fleet re-runs the same shapes on the same
    nodes often, and the full model walks every group of ranks.
    """

    fleet: Fleet
    knobs: StepKnobs = DEFAULT_KNOBS
    _domains: dict[str, int] = field(init=False, repr=False)
    _memo: dict[tuple, float] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._domains = domain_sizes(self.fleet)

    def __call__(self, job: Job, pod_nodes: Sequence[int], table: NodeTable) -> float:
        par, profile = job.parallelism, job.training
        if par is None or profile is None or len(job.pod_sets) != 1:
            return 1.0
        gpus = job.pod_sets[0].request.gpus
        if gpus < 1 or par.world_size != gpus * len(pod_nodes):
            return 1.0
        key = (par, profile, gpus, tuple(pod_nodes))
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        ranks = [self.fleet.nodes[n] for n in pod_nodes for _ in range(gpus)]
        factor = slowdown(ranks, profile, par, self.fleet.fabric, self.knobs,
                          domain_gpus=self._domains[ranks[0].nvlink_domain])
        self._memo[key] = factor
        return factor


def runtime_model_for(kind: str, fleet: Fleet) -> TopologyRuntime | None:
    """The runtime model a scenario's ``runtime_model`` field names ("none" or "topology")."""
    return TopologyRuntime(fleet) if kind == "topology" else None
