"""Jobs that can never run on a fleet, found at load time, before any simulation.

A job is unschedulable when even an empty fleet (every node healthy, nothing running) cannot hold
all its pods at once. Checked per pod set, against every node whatever its health (a node that is
down now may come back, so it still counts):

1. a node must have an allowed GPU model (``gpu_models`` empty: any);
2. such a node must hold one pod: GPUs ≥ the pod's GPUs (≥ 1 for a fractional pod, on a
   MIG-capable model for a MIG slice), CPUs ≥ the pod's CPUs, memory ≥ the pod's memory;
3. all replicas together must fit: Σ over nodes of min(⌊gpus/g⌋, ⌊cpus/c⌋, ⌊mem/m⌋) ≥ replicas
   (a term whose request is 0 does not limit), summed across pod sets that share nodes.

The test is a necessary condition only (it ignores topology requirements and fractional packing),
so it never calls a runnable job unschedulable; a job it passes may still wait for ever, which the
simulation reports as "pending at the end".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpufleet.model.catalog import gpu_model
from gpufleet.model.fleet import Fleet
from gpufleet.model.job import Job, PodSet


@dataclass(frozen=True, slots=True)
class Unschedulable:
    job: str
    reason: str


def _pods_per_node(ps: PodSet, gpus: np.ndarray, cpus: np.ndarray, mem: np.ndarray) -> np.ndarray:
    """How many pods of ``ps`` each empty node holds: min(⌊gpus/g⌋, ⌊cpus/c⌋, ⌊mem/m⌋). A
    fractional pod shares GPUs, so its GPU term only asks for one GPU on the node."""
    r = ps.request
    unbounded = np.int64(10**9)
    fits = np.full(gpus.shape, unbounded, dtype=np.int64)
    if r.gpus > 0:
        fits = np.minimum(fits, np.floor(gpus / r.gpus).astype(np.int64))
    elif r.is_fractional:
        fits = np.where(gpus >= 1, fits, 0)
    for have, need in ((cpus, r.cpus), (mem, r.memory_gb)):
        if need > 0:
            fits = np.minimum(fits, np.floor(have / need).astype(np.int64))
    return fits


def why_never(job: Job, fleet: Fleet) -> str | None:
    """Why ``job`` can never run on ``fleet`` (one clause), or None when it might. A job with a
    node filter (``Job.eligible_nodes``) is checked against its eligible nodes only."""
    nodes = fleet.nodes
    if job.eligible_nodes is not None:
        nodes = [n for n in nodes if n.id in job.eligible_nodes]
        if not nodes:
            return "none of its eligible nodes is in the fleet"
    models = np.array([n.gpu for n in nodes])
    gpus = np.array([n.gpus for n in nodes], dtype=float)
    cpus = np.array([n.cpus for n in nodes], dtype=float)
    mem = np.array([n.memory_gb for n in nodes], dtype=float)
    capacity = np.zeros(len(nodes), dtype=float)  # GPUs still unclaimed by earlier pod sets
    capacity[:] = gpus
    for ps in job.pod_sets:
        r = ps.request
        allowed = np.isin(models, r.gpu_models) if r.gpu_models else np.ones(len(nodes), bool)
        if r.mig_profile is not None:
            allowed &= np.array([gpu_model(m).mig_capable for m in models], bool)
        if not allowed.any():
            what = f"GPU model {' or '.join(r.gpu_models)}" if r.gpu_models else "a MIG-capable GPU"
            have = ", ".join(sorted(set(models.tolist()))) or "no GPUs"
            return f"needs {what}; the fleet has {have}"
        per_node = _pods_per_node(ps, np.where(allowed, capacity, 0), cpus, mem)
        per_node = np.where(allowed, per_node, 0)
        if not per_node.any():
            shape = (f"{r.gpus} GPU" + ("s" if r.gpus != 1 else "")) if r.gpus else "a GPU share"
            return (f"one pod needs {shape}, {r.cpus:g} CPUs and {r.memory_gb:g} GB; the largest node with "
                    f"an allowed model has {int(gpus[allowed].max())} GPUs, {int(cpus[allowed].max())} CPUs "
                    f"and {int(mem[allowed].max())} GB")
        if int(per_node.sum()) < ps.replicas:
            if r.gpus and r.cpus == 0 and r.memory_gb == 0:
                return (f"needs {ps.replicas} pods × {r.gpus} GPUs = {ps.replicas * r.gpus} GPUs at once; "
                        f"the fleet holds at most {int(per_node.sum())} such pods "
                        f"({int(gpus[allowed].sum())} allowed GPUs)")
            return (f"needs {ps.replicas} pods at once; the fleet holds at most "
                    f"{int(per_node.sum())} such pods")
        if r.gpus:
            # Later pod sets of the same job compete for the same GPUs: take the largest nodes first.
            left = ps.replicas
            for i in np.argsort(-per_node, kind="stable"):
                take = min(left, int(per_node[i]))
                capacity[i] -= take * r.gpus
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
