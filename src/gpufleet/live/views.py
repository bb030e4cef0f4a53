"""Read views over a ``LiveSnapshot``: what the API returns and the dashboard renders.

Each function takes the snapshot the loop published and returns a pydantic model (so the API's
OpenAPI schema and the dashboard's Python contract are the same types). Nothing here decides:
statuses, estimates and reservations are the engine's, read from the last cycle.

Pending reasons are a bounded set (metric labels, filters): a job's reason is the category of
the engine's status code for it (``reason_of``).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from pydantic import BaseModel

from gpufleet.engine.status import Status, StatusCode
from gpufleet.engine.types import RunningJob
from gpufleet.live.snapshot import LiveSnapshot
from gpufleet.model.job import Job
from gpufleet.sim.step import stranded_gpus

#: The bounded pending reasons, from the engine's status codes (and the loop's own states).
REASONS = ("quota", "capacity", "reservation", "unresolvable", "not_examined", "held")


def reason_of(status: Status | None) -> str:
    """The bounded reason category of a waiting job's engine status."""
    if status is None:
        return "not_examined"
    if status.code is StatusCode.NOT_ADMITTED:
        return "quota"
    if status.code is StatusCode.UNRESOLVABLE:
        return "unresolvable"
    if status.code is StatusCode.UNSCHEDULABLE:
        return "capacity"
    if any(r.startswith("not examined") for r in status.reasons):
        return "not_examined"
    return "reservation"


class GpuStates(BaseModel):
    """allocated + free + drained + unhealthy = total; stranded is the part of free no pending job
    can use."""

    total: int
    allocated: int
    free: int
    #: Free GPUs no pending job can use (wrong shape, model, CPU or memory used up).
    stranded: int
    #: Free GPUs on nodes failed or unhealthy (a failed node, a health state but healthy, a
    #: source's down node): what an "unhealthy GPU" alert should count.
    unhealthy: int
    #: Free GPUs on healthy nodes taken out of service on purpose (drained, cordoned, maintenance,
    #: a reservation): planned, so not unhealthy.
    drained: int = 0


class FleetSummary(BaseModel):
    now: float
    source: str
    source_ok: bool
    source_detail: str
    #: Whether the source answered at its last read (same as ``source_ok``), since when (wall
    #: clock, epoch seconds; None: since the start) and its last error (kept after recovery).
    source_reachable: bool = True
    source_since: float | None = None
    source_last_error: str = ""
    nodes: int
    nodes_out_of_service: int
    gpus: GpuStates
    pending_jobs: int
    running_jobs: int
    pending_by_reason: dict[str, int]
    cycles: int
    last_cycle_s: float
    preemptions: int
    lost_gpu_hours: float


class NodeView(BaseModel):
    name: str
    gpu: str
    gpus: int
    gpus_free: int
    cpus_free: float
    memory_free_gb: float
    #: "up", or why it takes no new work: "drain", "cordon", "fail", "down" (its health).
    state: str
    health: str
    zone: str
    spine: str
    leaf: str
    jobs: list[str]


class FlavorUsage(BaseModel):
    flavor: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    #: GPUs of this flavor the tenant's running jobs hold.
    usage: int
    #: Usage above nominal (taken from the cohort).
    borrowed: int
    #: Nominal the tenant does not use, which its cohort may lend (capped by the lending limit).
    lendable: int


class QueueView(BaseModel):
    name: str
    cohort: str | None
    weight: float
    flavors: list[FlavorUsage]
    running_jobs: int
    running_gpus: int
    pending_jobs: int
    pending_gpus: int
    pending_by_reason: dict[str, int]
    #: Decayed GPU-seconds (fair share's history), and running GPUs / nominal / weight (the
    #: share a weighted fair-share order compares; None without a nominal quota).
    decayed_usage_gpu_s: float
    weighted_share: float | None
    #: Where ``nominal`` comes from over a real source: "GrpTRES" (Slurm's GPU limit on the
    #: account) or "shares" (no GrpTRES: borrows without limit); None: the tenancy file.
    nominal_basis: str | None = None
    #: Who computed ``weighted_share``: "gpufleet" (running GPUs ÷ nominal ÷ weight) or
    #: "sshare" (Slurm's effective usage ÷ normalized shares).
    share_from: str = "gpufleet"


class JobView(BaseModel):
    id: str
    tenant: str
    #: pending, running, held, finished, cancelled (the store adds the last three).
    state: str
    gpus: int
    pods: int
    priority: int
    submit_time: float
    run_time: float
    start_time: float | None = None
    nodes: list[str] = []
    reason: str | None = None
    status: str | None = None
    reasons: list[str] = []
    estimated_start: float | None = None


#: Out-of-service words (the service's node actions, Slurm's and Kubernetes' states) that say a
#: person took the node out on purpose.
PLANNED = frozenset({"drain", "drained", "draining", "drng", "cordon", "cordoned", "maint", "reserved"})


def _planned(snap: LiveSnapshot, i: int) -> bool:
    """Whether node i is out of service on purpose: a planned word and a healthy node."""
    n = snap.fleet.nodes[i]
    word = snap.out_of_service.get(n.id, "")
    return str(n.health) == "healthy" and (word in PLANNED or word.startswith("reservation "))


def fleet_summary(snap: LiveSnapshot) -> FleetSummary:
    t = snap.table
    total = int(t.gpu_total.sum())
    free = int(t.gpu_free.sum())
    down = ~t.schedulable
    off = int(t.gpu_free[down].sum())
    planned = [i for i in np.flatnonzero(down) if _planned(snap, int(i))]
    drained = int(t.gpu_free[planned].sum()) if planned else 0
    unhealthy = off - drained
    # stranded_gpus counts out-of-service nodes' free GPUs too (no pod fits there): they are
    # drained or unhealthy here, so the states add up to the total
    stranded = stranded_gpus(t, snap.shapes) - (off if snap.shapes else 0)
    by_reason = Counter(reason_of(snap.statuses.get(j)) for j in snap.pending)
    return FleetSummary(
        now=snap.now, source=snap.source, source_ok=snap.health.ok, source_detail=snap.health.detail,
        source_reachable=snap.health.ok, source_since=snap.health.since,
        source_last_error=snap.health.last_error, nodes=len(t), nodes_out_of_service=int(down.sum()),
        gpus=GpuStates(total=total, allocated=total - free, free=free - off, stranded=stranded,
                       unhealthy=unhealthy, drained=drained),
        pending_jobs=len(snap.pending), running_jobs=len(snap.running),
        pending_by_reason={r: by_reason.get(r, 0) for r in REASONS},
        cycles=snap.cycles, last_cycle_s=snap.last_cycle.duration_s, preemptions=snap.preemptions,
        lost_gpu_hours=snap.lost_gpu_s / 3600.0)


def node_view(snap: LiveSnapshot, i: int) -> NodeView:
    t, n = snap.table, snap.fleet.nodes[i]
    state = snap.out_of_service.get(n.id) or ("up" if t.schedulable[i] else "down")
    return NodeView(name=n.id, gpu=n.gpu, gpus=n.gpus, gpus_free=int(t.gpu_free[i]),
                    cpus_free=float(t.cpu_free[i]), memory_free_gb=float(t.mem_free[i]), state=state,
                    health=str(n.health), zone=n.zone, spine=n.spine, leaf=n.leaf,
                    jobs=list(snap.node_jobs.get(i, ())))


def nodes(snap: LiveSnapshot) -> list[NodeView]:
    return [node_view(snap, i) for i in range(len(snap.fleet.nodes))]


def node(snap: LiveSnapshot, name: str) -> NodeView | None:
    i = snap.table.names.index(name) if name in snap.table.names else None
    return node_view(snap, i) if i is not None else None


def queues(snap: LiveSnapshot) -> list[QueueView]:
    """One view per tenant queue: its quota per flavor against what it runs, and its queue."""
    ten = snap.tenancy
    names = [q.name for q in ten.tenants] if ten is not None else []
    model_of = dict(zip(snap.table.names, (n.gpu for n in snap.fleet.nodes), strict=True))
    used: dict[str, Counter[str]] = {}
    for rj in snap.running.values():
        c = used.setdefault(rj.job.tenant, Counter())
        for b in rj.bindings:
            c[model_of[snap.table.names[b.node]]] += b.request.gpus
    facts = snap.extra.get("queue_facts")
    pending_of: dict[str, list[Job]] = {}
    for j in snap.pending.values():   # one pass, not one per queue (100,000 jobs × each queue)
        pending_of.setdefault(j.tenant, []).append(j)
    running_of: dict[str, list[RunningJob]] = {}
    for rj in snap.running.values():
        running_of.setdefault(rj.job.tenant, []).append(rj)
    names += [n for n in sorted(pending_of.keys() | running_of.keys()) if n not in names]
    out = []
    for name in names:
        q = ten.tenant(name) if ten is not None else None
        mine_p, mine_r = pending_of.get(name, []), running_of.get(name, [])
        u = used.get(name, Counter())
        flavors = []
        for flavor, fq in (q.quotas if q is not None else ()):
            have = u.get(flavor, 0)
            spare = max(0, fq.nominal - have)
            flavors.append(FlavorUsage(
                flavor=flavor, nominal=fq.nominal, borrowing_limit=fq.borrowing_limit,
                lending_limit=fq.lending_limit, usage=have, borrowed=max(0, have - fq.nominal),
                lendable=spare if fq.lending_limit is None else min(spare, fq.lending_limit)))
        nominal = q.nominal_gpus if q is not None else 0
        running_gpus = sum(r.job.total_gpus for r in mine_r)
        share = running_gpus / nominal / (q.weight or 1.0) if q is not None and nominal > 0 else None
        fact = facts.get(name) if isinstance(facts, dict) else None
        if isinstance(facts, dict):
            share = fact.share if fact is not None else None
        by_reason = Counter(reason_of(snap.statuses.get(j.id)) for j in mine_p)
        out.append(QueueView(
            name=name, cohort=q.cohort if q is not None else None,
            weight=q.weight if q is not None else 1.0, flavors=flavors, running_jobs=len(mine_r),
            running_gpus=running_gpus, pending_jobs=len(mine_p),
            pending_gpus=sum(j.total_gpus for j in mine_p),
            pending_by_reason={r: by_reason.get(r, 0) for r in REASONS},
            decayed_usage_gpu_s=snap.usage.get(name, 0.0), weighted_share=share,
            nominal_basis=fact.nominal_basis if fact is not None else None,
            share_from="sshare" if isinstance(facts, dict) else "gpufleet"))
    return out


def job_view(snap: LiveSnapshot, job_id: str) -> JobView | None:
    """The live state of one job, or None when the live world does not hold it (finished,
    cancelled, held: the store knows those)."""
    rj = snap.running.get(job_id)
    if rj is not None:
        j = rj.job
        nodes_ = sorted({snap.table.names[b.node] for b in rj.bindings})
        return JobView(id=j.id, tenant=j.tenant, state="running", gpus=j.total_gpus, pods=j.total_pods,
                       priority=j.priority, submit_time=j.submit_time, run_time=j.run_time,
                       start_time=rj.start_time, nodes=nodes_)
    j = snap.pending.get(job_id)
    if j is None:
        return None
    st = snap.statuses.get(job_id)
    return JobView(id=j.id, tenant=j.tenant, state="pending", gpus=j.total_gpus, pods=j.total_pods,
                   priority=j.priority, submit_time=j.submit_time, run_time=j.run_time,
                   reason=reason_of(st), status=str(st.code) if st is not None else None,
                   reasons=list(st.reasons) if st is not None else [],
                   estimated_start=st.estimated_start if st is not None else None)
