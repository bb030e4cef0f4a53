"""The jobs that finished, per tenant: what History (the page and ``/api/v1/history``) counts.

The store holds every job submitted through the service, with its times as the source reported
them. A source with accounting of its own (Slurm's sacct: ``finished_runs``) also knows the jobs
that never went through the service (``sbatch``); over such a source its record is used for every
job it lists (the times are Slurm's own), and the store's for the rest. Preemptions likewise: the
store counts the evictions the loop saw; Slurm's accounting adds each job that ended PREEMPTED.
"""

from __future__ import annotations

from typing import Any

from gpufleet.service.runtime import Service


def finished_jobs(svc: Service, since: float) -> list[Any]:
    """Jobs that started and ended, ending at or after ``since`` (source time), by end time.
    Each has ``id``, ``tenant``, ``gpus``, ``submit_time``, ``start_time``, ``end_time``."""
    recs: dict[str, Any] = {r.id: r for r in svc.store.history(since)
                            if r.start_time is not None and r.end_time is not None}
    runs = getattr(svc.source, "finished_runs", None)
    if callable(runs):
        recs.update((r.id, r) for r in runs(since))
    return sorted(recs.values(), key=lambda r: (r.end_time, r.id))


def evictions(svc: Service, since: float) -> dict[str, tuple[int, int, float]]:
    """Per tenant: (preemptions, node-failure requeues, GPU-seconds lost), the store's evictions
    plus the source's accounting's preempted jobs (no lost work known for those)."""
    out = dict(svc.store.evictions(since))
    runs = getattr(svc.source, "finished_runs", None)
    if callable(runs):
        for r in runs(since):
            if r.preempted:
                pre, req, lost = out.get(r.tenant, (0, 0, 0.0))
                out[r.tenant] = (pre + 1, req, lost)
    return out
