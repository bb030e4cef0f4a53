"""What the ``kueue`` profile carries between cycles, and how a waiting reservation is counted.

Kueue reserves a workload's quota at admission (``QuotaReserved``) and keeps it until the
workload finishes or is evicted, whether or not its pods have found nodes; the driver carries
those reservations in ``CycleInput.admission`` (engine/types.py ``AdmissionState``), with the
sticky heads of KEP-7157. Admission (policies/kueue/admit.py) charges them first; preemption
(policies/kueue/preemption.py) treats a reservation whose pods have not started as a candidate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from gpufleet.engine.plan import PodBinding
from gpufleet.engine.types import PendingJob, QuotaReservation, RunningJob
from gpufleet.model.ids import JobId
from gpufleet.model.job import Job
from gpufleet.model.tenancy import Tenancy
from gpufleet.policies.kueue.flavors import pin_pod_sets
from gpufleet.policies.kueue.resources import ResourceLedger
from gpufleet.policies.quota import QuotaLedger, with_flavor


def charge_reservation(ledger: QuotaLedger, res: ResourceLedger, job: Job, r: QuotaReservation) -> Job:
    """Charge a quota reservation kept from an earlier cycle to ``ledger`` and ``res`` as the
    cycle that made it did; ``job`` pinned to its flavors."""
    if r.pod_sets:
        for i, f in r.pod_sets:
            part = replace(job, pod_sets=(job.pod_sets[i],))
            ledger.add(job.tenant, f, part.total_gpus)
            res.add_job(part, f)
        return pin_pod_sets(job, [(i, f, False) for i, f in r.pod_sets])
    ledger.add(job.tenant, r.flavor, job.total_gpus)
    res.add_job(job, r.flavor)
    return with_flavor(job, r.flavor) if job.total_gpus else job


def reservation_still_valid(r: QuotaReservation, job: Job, ledger: QuotaLedger) -> bool:
    """Whether a reservation carried from an earlier cycle still describes ``job`` under this
    cycle's tenancy: its queue exists and still offers each flavor it holds quota on for the job,
    and each pod set it names is one of the job's. A config change (a flavor dropped from the
    queue) or a resubmitted job with other pod sets drops the reservation: the job is decided
    afresh, as a new workload would be, instead of starting on quota nobody has any more."""
    if ledger.tenancy.tenant(job.tenant) is None:
        return False
    if r.pod_sets:
        if any(i >= len(job.pod_sets) for i, _ in r.pod_sets):
            return False
        return all(f in ledger.candidate_flavors(replace(job, pod_sets=(job.pod_sets[i],)))
                   for i, f in r.pod_sets)
    return job.total_gpus == 0 or r.flavor in ledger.candidate_flavors(job)


def sticky_heads(previous: Mapping[str, JobId], queues: dict[str, list[PendingJob]],
                 tenancy: Tenancy) -> dict[str, JobId]:
    """The sticky heads still in force: BestEffortFIFO queues whose sticky job is still waiting
    (not started, not admitted, still queued)."""
    out: dict[str, JobId] = {}
    for name, jid in previous.items():
        t = tenancy.tenant(name)
        if t is None or t.kueue.queueing_strategy != "BestEffortFIFO":
            continue
        if any(p.job.id == jid for p in queues.get(name, ())):
            out[name] = jid
    return out


def pod_set_parts(job: Job) -> dict[str, Job] | None:
    """flavor → ``job`` restricted to its GPU pod sets pinned to that flavor, when they are
    pinned to two or more different flavors; else None (one flavor: the usual search)."""
    by: dict[str, list] = {}
    for ps in job.pod_sets:
        if ps.request.gpus == 0:
            continue
        if len(ps.request.gpu_models) != 1:
            return None
        by.setdefault(ps.request.gpu_models[0], []).append(ps)
    if len(by) < 2:
        return None
    return {f: replace(job, pod_sets=tuple(sets)) for f, sets in by.items()}


def charge(ledger: QuotaLedger, res: ResourceLedger, job: Job, parts: dict[str, Job]) -> None:
    """Charge ``job``'s quota, each part on its flavor."""
    for f, part in parts.items():
        ledger.add(job.tenant, f, part.total_gpus)
        res.add_job(part, f)


#: The node of a reserved workload's stand-in bindings: its quota, on no node.
QUOTA_ONLY = -1


def reserved_candidates(records: list, carried: Mapping[JobId, QuotaReservation],
                        waiting: set[JobId]) -> list[RunningJob]:
    """Workloads holding a quota reservation from an earlier cycle whose pods have not started:
    admitted workloads to Kueue, and so preemption candidates like running ones (ordered by when
    they were admitted, ``QuotaReservation.since``). Each stands in as a RunningJob whose
    bindings carry its quota on no node (``QUOTA_ONLY``): evicting it frees quota, not GPUs."""
    out: list[RunningJob] = []
    for r in records:
        j = r.pending.job
        if r.admitted and j.id in carried and j.id in waiting and j.total_gpus:
            bindings = tuple(PodBinding(j.id, ps.name, i, QUOTA_ONLY, ps.request)
                             for ps in j.pod_sets for i in range(ps.replicas))
            out.append(RunningJob(j, carried[j.id].since, bindings))
    return out
