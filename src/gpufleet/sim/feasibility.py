"""Jobs that can never run on a fleet, found at load time, before any simulation.

A job is unschedulable when even an empty fleet (every node healthy, nothing running) cannot hold
all its pods at once. Checked per pod set, against every node whatever its health (a node that is
down now may come back, so it still counts):

1. a node must have an allowed GPU model (``gpu_models`` empty: any);
2. such a node must hold one pod, and all replicas together must fit: Σ over nodes of the pods a
   node holds ≥ replicas, where "pods a node holds" is the engine's own count (``NodeTable.slots``
   on the empty table: min(⌊gpus/g⌋, ⌊cpus/c⌋, ⌊mem/m⌋), a term whose request is 0 does not limit;
   for a MIG slice or a soft share, the instances or shares the node's GPUs hold, on a
   MIG-capable model for MIG). Earlier pod sets of the job take their GPUs first, largest nodes
   first.

The test is a necessary condition only (it ignores topology requirements),
so it never calls a runnable job unschedulable; a job it passes may still wait for ever, which the
simulation reports as "pending at the end".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpufleet.engine.snapshot import NodeTable
from gpufleet.model.catalog import gpu_model
from gpufleet.model.fleet import Fleet
from gpufleet.model.job import Job


@dataclass(frozen=True, slots=True)
class Unschedulable:
    job: str
    reason: str


def _empty_table(fleet: Fleet, job: Job) -> NodeTable | str:
    """The fleet's table as if empty and every node healthy, restricted to the job's node filter;
    or the clause saying that filter leaves no node."""
    table = NodeTable.from_fleet(fleet)
    table.schedulable[:] = True
    if job.eligible_nodes is None:
        return table
    mask = np.isin(np.array(table.names, dtype=object), list(job.eligible_nodes))
    if not mask.any():
        return "none of its eligible nodes is in the fleet"
    return table.restricted(job.eligible_nodes, mask)


def why_never(job: Job, fleet: Fleet) -> str | None:
    """Why ``job`` can never run on ``fleet`` (one clause), or None when it might. A job with a
    node filter (``Job.eligible_nodes``) is checked against its eligible nodes only. Pods per
    node are the engine's own count (``NodeTable.slots``) on the empty, all-healthy table."""
    table = _empty_table(fleet, job)
    if isinstance(table, str):
        return table
    on = table.schedulable  # the eligible nodes
    models = np.array(table.gpu_models)[table.model_idx[on]]
    for ps in job.pod_sets:
        r = ps.request
        mm = table.model_mask(r.gpu_models)
        allowed = on if mm is None else on & mm
        if r.mig_profile is not None:
            capable = np.array([gpu_model(m).mig_capable for m in table.gpu_models])
            allowed = allowed & capable[table.model_idx]
        if not allowed.any():
            what = f"GPU model {' or '.join(r.gpu_models)}" if r.gpu_models else "a MIG-capable GPU"
            have = ", ".join(sorted(set(models.tolist()))) or "no GPUs"
            return f"needs {what}; the fleet has {have}"
        per_node = table.slots(r) * allowed
        if not per_node.any():
            shape = (f"{r.gpus} GPU" + ("s" if r.gpus != 1 else "")) if r.gpus else "a GPU share"
            big = [int(col[allowed].max()) for col in (table.gpu_total, table.cpu_total, table.mem_total)]
            return (f"one pod needs {shape}, {r.cpus:g} CPUs and {r.memory_gb:g} GB; the largest node with "
                    f"an allowed model has {big[0]} GPUs, {big[1]} CPUs and {big[2]} GB")
        if int(np.minimum(per_node, ps.replicas).sum()) < ps.replicas:
            if r.gpus and r.cpus == 0 and r.memory_gb == 0:
                return (f"needs {ps.replicas} pods × {r.gpus} GPUs = {ps.replicas * r.gpus} GPUs at once; "
                        f"the fleet holds at most {int(per_node.sum())} such pods "
                        f"({int(table.gpu_total[allowed].sum())} allowed GPUs)")
            return (f"needs {ps.replicas} pods at once; the fleet holds at most "
                    f"{int(per_node.sum())} such pods")
        if r.gpus:
            # Later pod sets of the same job compete for the same GPUs: take the largest nodes first.
            left = ps.replicas
            for i in np.argsort(-per_node, kind="stable").tolist():
                take = min(left, int(per_node[i]))
                table.gpu_free[i] -= take * r.gpus
                left -= take
                if left == 0:
                    break
    return None


def unschedulable_jobs(jobs: list[Job], fleet: Fleet) -> list[Unschedulable]:
    """Every job that can never run on ``fleet``, with its reason; jobs of one shape share a check."""
    seen: dict[tuple, str | None] = {}
    out: list[Unschedulable] = []
    for j in jobs:
        key = j.shape_key
        if key not in seen:
            seen[key] = why_never(j, fleet)
        if seen[key] is not None:
            out.append(Unschedulable(j.id, seen[key]))  # type: ignore[arg-type]
    return out
